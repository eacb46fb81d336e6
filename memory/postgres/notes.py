"""The note store on PostgreSQL: the neutral store (`memory.sql.notes`) with PostgreSQL's
part: bm25 over each note's `tsvector` (`note_search.py`, `words.py`), whose word
statistics are forgotten on each write here; COPY for imports and the items of a change of
many notes (`note_import.py`); deleted rows read back by `RETURNING`; reads counted at
once. Scope indexes are read fresh: another replica may have written since."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from memory.clock import Clock, utc_now
from memory.policy.visibility import Visibility
from memory.postgres import note_import
from memory.postgres.database import PostgresDatabase
from memory.postgres.note_rows import UPSERT_NOTE, state_values
from memory.postgres.note_search import LENGTH, NoteSearch, note_fields
from memory.postgres.session import session_of
from memory.postgres.words import TableStats
from memory.ranking import Method
from memory.sql.note_engine import Item
from memory.sql.notes import SqlNoteStore
from memory.sql.session import Params, Row, Session, Statement
from memory.stores.vectors import VectorIndex
from memory.types import Scope, SearchHit


class PostgresNotes:
    """PostgreSQL's part of the note store (`memory.sql.note_engine.NoteEngine`)."""

    def __init__(self, db: PostgresDatabase, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self.import_drafts = functools.partial(note_import.import_drafts, db)
        # Cleared by every write here, so this process ranks by what it just wrote.
        self.word_stats = TableStats(db, "notes", LENGTH, note_fields)

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
        search = NoteSearch(self.db, self.clock, vectors, fusion, self.word_stats)
        return await search.top(query, visibility, k, snippets, vector)

    def changed(self) -> None:
        self.word_stats.clear()

    async def write_state(
        self, sql: Session, scope: Scope, topic: str, state: dict[str, object], *, new: bool
    ) -> None:
        await sql.run(UPSERT_NOTE, (str(scope), topic, *state_values(state)))

    async def delete_notes(self, sql: Session, where: str, params: Params) -> list[Row]:
        return await sql.rows(f"DELETE FROM notes WHERE {where} RETURNING *", params)

    async def insert_items(self, sql: Session, change_id: int, items: Sequence[Item]) -> None:
        await note_import.copy_items(session_of(sql).conn, change_id, items)

    async def write_soon(self, sql: str, params: Params) -> None:
        """Queued to ride along with the next batched transaction (a turn's history
        write)."""
        self.db.defer(sql, params)

    async def flush(self) -> None:
        await self.db.flush()

    @property
    def data_version(self) -> Statement | None:
        return None


class PostgresNoteStore(SqlNoteStore):
    """The note store of a PostgreSQL database: the neutral store given PostgreSQL's part
    (a constructor only; `SqlNoteStore` takes the other options)."""

    def __init__(self, db: PostgresDatabase, *, clock: Clock = utc_now, **options: Any) -> None:
        super().__init__(db, PostgresNotes(db, clock), clock=clock, **options)
