"""The note store on SQLite: the neutral store (`memory.sql.notes`) with SQLite's part:
bm25 over FTS5 (`note_search.py`), the FTS5 row a new note gets (`note_sql.py`), imports
written in chunks on the writer's thread (`note_import.py`), reads counted with the next
transaction rather than in one of their own, and scope indexes cached until another
connection commits (SQLite's `data_version` moves)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from memory.clock import Clock, utc_now
from memory.policy.note_states import STATE_COLUMNS
from memory.policy.visibility import Visibility, scope_keys
from memory.ranking import Method
from memory.sql.note_engine import Item
from memory.sql.notes import SqlNoteStore
from memory.sql.session import Params, Row, Session, Statement
from memory.sqlite import note_import
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.note_search import NoteSearch
from memory.sqlite.note_sql import INDEX_NOTES, INSERT_ITEM, UPSERT_NOTE
from memory.sqlite.term_stats import TermStats
from memory.stores.vectors import VectorIndex
from memory.types import Scope, SearchHit


class SqliteNotes:
    """SQLite's part of the note store (`memory.sql.note_engine.NoteEngine`)."""

    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self.import_drafts = functools.partial(note_import.import_drafts, db)
        self.term_stats = TermStats(db)

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
        search = NoteSearch(self.db, self.clock, self.term_stats, vectors, fusion)
        return await search.top(query, visibility, k, snippets, vector)

    def changed(self) -> None:
        """Nothing to forget: term statistics follow the store's size by themselves."""

    async def write_state(
        self, sql: Session, scope: Scope, topic: str, state: dict[str, object], *, new: bool
    ) -> None:
        keys = scope_keys(scope, bool(state["private"]))
        await sql.run(UPSERT_NOTE, (str(scope), topic, keys, *(state[c] for c in STATE_COLUMNS)))
        if new:  # triggers index the updates and deletes
            await sql.run(f"{INDEX_NOTES} WHERE scope = ? AND topic = ?", (str(scope), topic))

    async def delete_notes(self, sql: Session, where: str, params: Params) -> list[Row]:
        found = await sql.rows(f"SELECT * FROM notes WHERE {where}", params)
        if found:  # in the same write transaction: the same notes
            await sql.run(f"DELETE FROM notes WHERE {where}", params)
        return found

    async def insert_items(self, sql: Session, change_id: int, items: Sequence[Item]) -> None:
        await sql.run_many(INSERT_ITEM, [(change_id, *item) for item in items])

    async def write_soon(self, sql: str, params: Params) -> None:
        """Queued to ride along with the next transaction (a turn's history write)."""
        self.db.defer(sql, [tuple(params)])

    async def flush(self) -> None:
        await self.db.flush()

    @property
    def data_version(self) -> Statement | None:
        return _DATA_VERSION


# Moves when another connection commits (not on this connection's own writes).
_DATA_VERSION = Statement("PRAGMA data_version")


class SqliteNoteStore(SqlNoteStore):
    """The note store of a SQLite database: the neutral store given SQLite's part (a
    constructor only; `SqlNoteStore` takes the other options)."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock = utc_now, **options: Any) -> None:
        super().__init__(db, SqliteNotes(db, clock), clock=clock, **options)
