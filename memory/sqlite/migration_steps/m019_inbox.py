"""Migration 19: the events taken and not finished, and which replica handles each
conversation's (`memory.stores.inbox`)."""

SQL = """
    CREATE TABLE inbox (id INTEGER PRIMARY KEY, platform TEXT NOT NULL,
        conversation TEXT NOT NULL, key TEXT NOT NULL, payload_json TEXT NOT NULL,
        taken_at TEXT NOT NULL, started_at TEXT);
    CREATE INDEX inbox_by_conversation ON inbox (conversation, id);
    CREATE TABLE conversation_claims (conversation TEXT PRIMARY KEY,
        holder TEXT NOT NULL, until TEXT NOT NULL) WITHOUT ROWID;
    """
