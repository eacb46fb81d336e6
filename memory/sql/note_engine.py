"""What the note store leaves to its engine: the writes each engine does its own way (a
note's word index, many rows at once)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory.sql.session import Session
    from memory.types import Scope

# An item of a change of many notes: a note's scope, topic and kept state before (None:
# there was no note).
Item = tuple[str, str, str | None]


class NoteWrites(Protocol):
    """The writes of notes each engine does its own way (the change sets' revert rules,
    `memory.sql.note_changes`, write through them)."""

    async def write_state(
        self, sql: Session, scope: Scope, topic: str, state: dict[str, object], *, new: bool
    ) -> None:
        """Insert (`new`) or update one note to a kept state, its word index with it."""
        ...

    async def insert_items(self, sql: Session, change_id: int, items: Sequence[Item]) -> None:
        """Write the items of change `change_id` of many notes, however many."""
        ...
