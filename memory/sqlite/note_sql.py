"""The SQL the note store's modules share: note and change-set statements, the live-note
filter, and the WHERE fragments that admit exactly what a `Visibility` may read."""

from __future__ import annotations

import functools
import operator

from memory.sqlite import rows
from memory.types import Scope
from memory.visibility import Visibility

LIVE = "(expires_at IS NULL OR expires_at > ?)"
INSERT_NOTE = (
    f"INSERT INTO notes (scope, topic, scope_keys, {', '.join(rows.STATE_COLUMNS)}) "
    f"VALUES (?, ?, ?, {', '.join('?' for _ in rows.STATE_COLUMNS)})"
)
UPSERT_NOTE = (
    f"{INSERT_NOTE} ON CONFLICT (scope, topic) DO UPDATE SET scope_keys = excluded.scope_keys, "
    + ", ".join(f"{c} = excluded.{c}" for c in rows.STATE_COLUMNS)
)
INDEX_NOTES = (
    "INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys) "
    "SELECT id, topic, summary, body, scope_keys FROM notes"
)
INSERT_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, before_json, after_json, actor, reason, "
    "proposal_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# A change of many notes (an import, or the revert of one): its row has no scope, topic or
# states; each note it touched is an item with its state before.
INSERT_MANY_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, actor, reason, created_at) "
    "VALUES (NULL, NULL, ?, ?, ?, ?)"
)
INSERT_ITEM = (
    "INSERT INTO note_change_items (change_id, scope, topic, before_json) VALUES (?, ?, ?, ?)"
)
NOTE_ROW_VALUES = 3 + len(rows.STATE_COLUMNS)
ITEM_ROW_VALUES = 4
STATE_VALUES = operator.itemgetter(*rows.STATE_COLUMNS)


@functools.lru_cache(maxsize=4096)
def scope_text(scope: Scope) -> str:
    return str(scope)


def prefixed(alias: str) -> str:
    return ", ".join(alias + c.strip() for c in rows.NOTE_COLUMNS.split(","))


def change_visibility_sql(visibility: Visibility) -> tuple[str, tuple[str, ...]]:
    """A WHERE fragment over `note_changes` admitting the change sets `visibility` may see:
    in public-only scopes, only changes that touched no private state; a change of many
    notes only when every note of it is in one of the full scopes (its items do not keep
    the state after, so whether it made a note private is not known)."""
    public = (
        "coalesce(json_extract(before_json, '$.private'), 0) = 0 "
        "AND coalesce(json_extract(after_json, '$.private'), 0) = 0"
    )
    one, params = _scopes_sql(visibility, "scope", public)
    outside = ""
    if visibility.full:
        outside = f" AND i.scope NOT IN ({', '.join('?' for _ in visibility.full)})"
    many = (
        "scope IS NULL AND NOT EXISTS (SELECT 1 FROM note_change_items AS i "
        f"WHERE i.change_id = note_changes.id{outside})"
    )
    full = tuple(str(s) for s in visibility.full)
    return f"(scope IS NOT NULL AND ({one})) OR ({many})", (*params, *full)


def visibility_sql(visibility: Visibility, alias: str = "") -> tuple[str, tuple[str, ...]]:
    """A WHERE fragment admitting exactly the notes `visibility` may read."""
    return _scopes_sql(visibility, f"{alias}scope", f"{alias}private = 0")


def _scopes_sql(visibility: Visibility, column: str, public: str) -> tuple[str, tuple[str, ...]]:
    """`column` in the full scopes, or in the public-only scopes where `public` holds."""
    parts: list[str] = []
    params: list[str] = []
    if visibility.full:
        parts.append(f"{column} IN ({', '.join('?' for _ in visibility.full)})")
        params += [str(s) for s in visibility.full]
    if visibility.public_only:
        marks = ", ".join("?" for _ in visibility.public_only)
        parts.append(f"({column} IN ({marks}) AND {public})")
        params += [str(s) for s in visibility.public_only]
    if not parts:
        return "0", ()
    return " OR ".join(parts), tuple(params)
