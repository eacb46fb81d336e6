"""Every SQLite store of one database file: notes, the conversation log and vectors built
here, over this engine's search and vector tables; the others by `memory.sql.stores`, on
first use."""

from __future__ import annotations

from pathlib import Path

from memory.embedder import Embedder
from memory.sql.stores import SqlStores
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.stores import StoreOptions


class SqliteStores(SqlStores[SqliteDatabase, SqliteNoteStore]):
    """The `Stores` of one SQLite database."""

    def __init__(
        self, db: SqliteDatabase, options: StoreOptions, embedder: Embedder | None = None
    ) -> None:
        super().__init__(
            db,
            options,
            embedder,
            vector_tables=SqliteVectorTables(db),
            message_search=SqliteMessageSearch(db),
            note_store=SqliteNoteStore,
        )


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
