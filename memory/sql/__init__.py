"""The stores' logic, written once for every engine: SQL in lorebot's neutral form (`?`
placeholders) over a `Session`, and the domain rules as plain code above it. An engine
package supplies the session, its dialect and what truly differs (full-text ranking,
vectors, the leader lock, migrations)."""
