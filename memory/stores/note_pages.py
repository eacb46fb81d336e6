"""Notes a page at a time, for the web console: what one person may read, by scope, newest
first, with counts. Every read takes a `Visibility` and filters by it in SQL, as chat's do,
so an id or a scope typed into an address never reveals more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory.policy.visibility import Visibility
    from memory.types import Change, Note, Scope


@dataclass(frozen=True, slots=True)
class NotePage:
    """One page of a scope's notes and how many there are in all."""

    notes: list[Note]
    total: int


class NotePages(Protocol):
    async def scope_counts(self, visibility: Visibility | None) -> list[tuple[Scope, int]]:
        """The scopes holding live notes `visibility` may read (None: every scope) and how
        many of them, by scope."""
        ...

    async def page(
        self, visibility: Visibility, scope: Scope, *, offset: int, limit: int
    ) -> NotePage:
        """Live notes of `scope` that `visibility` may read: pinned first, then the latest
        changed."""
        ...

    async def note(self, visibility: Visibility | None, note_id: int) -> Note | None:
        """One live note by id, if `visibility` may read it (None: any note, for an
        admin)."""
        ...

    async def change(self, visibility: Visibility | None, change_id: int) -> Change | None:
        """One change set of one note by id, if `visibility` may read its scope (None:
        any, for an admin)."""
        ...
