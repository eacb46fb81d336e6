"""A note's kept state (`memory.policy.note_states`: times as UTC text, flags as 0 or 1) as
PostgreSQL's values, for writing it back and for COPY."""

from __future__ import annotations

from collections.abc import Mapping

from memory.clock import from_utc_text
from memory.policy.note_states import FLAG_COLUMNS, STATE_COLUMNS, TIME_COLUMNS

_SET_STATE = ", ".join(f"{c} = excluded.{c}" for c in STATE_COLUMNS)
# Neutral SQL (`?`), its values from `state_values`; a note's word index follows by itself.
UPSERT_NOTE = (
    f"INSERT INTO notes (scope, topic, {', '.join(STATE_COLUMNS)}) "
    f"VALUES (?, ?, {', '.join('?' for _ in STATE_COLUMNS)}) "
    f"ON CONFLICT (scope, topic) DO UPDATE SET {_SET_STATE}"
)


def state_values(state: Mapping[str, object]) -> list[object]:
    """A kept state as the values of STATE_COLUMNS for PostgreSQL."""
    values: list[object] = []
    for column in STATE_COLUMNS:
        value = state[column]
        if column in TIME_COLUMNS:
            value = None if value is None else from_utc_text(str(value))
        elif column in FLAG_COLUMNS:
            value = bool(value)
        values.append(value)
    return values
