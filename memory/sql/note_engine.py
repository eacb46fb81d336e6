"""What the note store (`memory.sql.notes`) leaves to its engine: ranking by words, and the
writes each engine does its own way (a note's word index, many rows at once, deleted rows
read back, reads counted now or with the next transaction)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory.policy.visibility import Visibility
    from memory.ranking import Method
    from memory.sql.session import Params, Row, Session, Statement
    from memory.stores.notes import ImportResult
    from memory.stores.vectors import VectorIndex
    from memory.types import NoteDraft, Scope, SearchHit

# An item of a change of many notes: a note's scope, topic and kept state before (None:
# there was no note).
Item = tuple[str, str, str | None]


class ImportDrafts(Protocol):
    """An engine's bulk import of notes, bound to its database."""

    def __call__(
        self,
        drafts: Sequence[NoteDraft],
        validate: Callable[[NoteDraft], NoteDraft],
        *,
        actor: str,
        now: datetime,
        labels: Sequence[str],
        progress: Callable[[int, int], None] | None,
    ) -> Awaitable[ImportResult]: ...


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


class NoteEngine(NoteWrites, Protocol):
    """One engine's part of the note store."""

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int,
        snippets: bool,
        vector: Sequence[float] | None,
        vectors: VectorIndex | None,
        fusion: Method,
    ) -> list[SearchHit]:
        """`NoteStore.search` (k > 0) with the store's vector index (None: words alone rank)
        and fusion method, without counting the reads."""
        ...

    def changed(self) -> None:
        """The notes changed: forget what is kept of them for ranking."""
        ...

    async def delete_notes(self, sql: Session, where: str, params: Params) -> list[Row]:
        """Delete the notes `where` picks; their rows as they were."""
        ...

    @property
    def import_drafts(self) -> ImportDrafts:
        """`NoteStore.import_drafts`, each draft checked by `validate` (`memory.sql.note_import`
        plans it); `now` is the time of every change: the engine's bulk import, bound to its
        database."""
        ...

    async def write_soon(self, sql: str, params: Params) -> None:
        """Run a write that may wait (counting reads): now, or with the next transaction."""
        ...

    async def flush(self) -> None:
        """Write what `write_soon` kept waiting, before a read that shows it."""
        ...

    @property
    def data_version(self) -> Statement | None:
        """A statement reading what changes when another connection commits (its one row's
        `data_version`), so derived values (scope indexes) can be cached until then; None
        when the engine cannot tell (nothing is cached)."""
        ...
