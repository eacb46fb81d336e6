"""The SQL of SQLite's own note writes: a note's row carries its scope keys for FTS5, and a
new note is indexed by a statement of its own (imports index theirs in bulk, 4x faster),
while triggers keep the index in step with updates and deletes."""

from __future__ import annotations

import operator

from memory.policy.note_states import STATE_COLUMNS

INSERT_NOTE = (
    f"INSERT INTO notes (scope, topic, scope_keys, {', '.join(STATE_COLUMNS)}) "
    f"VALUES (?, ?, ?, {', '.join('?' for _ in STATE_COLUMNS)})"
)
UPSERT_NOTE = (
    f"{INSERT_NOTE} ON CONFLICT (scope, topic) DO UPDATE SET scope_keys = excluded.scope_keys, "
    + ", ".join(f"{c} = excluded.{c}" for c in STATE_COLUMNS)
)
INDEX_NOTES = (
    "INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys) "
    "SELECT id, topic, summary, body, scope_keys FROM notes"
)
INSERT_ITEM = (
    "INSERT INTO note_change_items (change_id, scope, topic, before_json) VALUES (?, ?, ?, ?)"
)
NOTE_ROW_VALUES = 3 + len(STATE_COLUMNS)
ITEM_ROW_VALUES = 4
STATE_VALUES = operator.itemgetter(*STATE_COLUMNS)
