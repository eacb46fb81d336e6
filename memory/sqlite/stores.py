"""Every SQLite store of one database file: notes, the conversation log and vectors built
here, over this engine's search and vector tables; the others by `memory.sql.stores`, on
first use."""

from __future__ import annotations

from pathlib import Path

from memory.embedder import Embedder
from memory.sql.conversations import SqlConversationLog
from memory.sql.stores import SqlStores
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores import StoreOptions


class SqliteStores(SqlStores[SqliteDatabase, SqliteNoteStore]):
    """The `Stores` of one SQLite database."""

    def __init__(
        self, db: SqliteDatabase, options: StoreOptions, embedder: Embedder | None = None
    ) -> None:
        vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
        notes = SqliteNoteStore(
            db,
            clock=options.clock,
            max_note_bytes=options.max_note_bytes,
            index_max_lines=options.index_max_lines,
            index_max_bytes=options.index_max_bytes,
            vectors=vectors,
            secrets=options.secrets,
        )
        log = SqlConversationLog(
            db, SqliteMessageSearch(db), clock=options.clock, secrets=options.secrets
        )
        super().__init__(db, options, vectors=vectors, notes=notes, log=log)


async def open_stores(
    path: Path,
    options: StoreOptions,
    *,
    embedder: Embedder | None = None,
    busy_timeout_ms: int = 5000,
    create: bool = True,
) -> SqliteStores:
    """Open (creating unless not `create`) and migrate the database at `path`, with the
    driver's self-test (sqlite-vec too when there is an `embedder`), and its stores."""
    db = await SqliteDatabase.open(
        path, busy_timeout_ms=busy_timeout_ms, want_vectors=embedder is not None, create=create
    )
    return SqliteStores(db, options, embedder)
