"""The SQL the note store's modules share: note statements, the live-note filter, and the
WHERE fragments that admit exactly what a `Visibility` may read."""

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
