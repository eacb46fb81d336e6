"""Every PostgreSQL store of one database: notes, the conversation log and vectors at once,
the others on first use, as on SQLite."""

from __future__ import annotations

from memory.embedder import Embedder
from memory.postgres.database import PostgresDatabase
from memory.postgres.message_search import PostgresMessageSearch
from memory.postgres.notes import PostgresNoteStore
from memory.postgres.vector_tables import PostgresVectorTables
from memory.sql.stores import SqlStores
from memory.stores.stores import StoreOptions


class PostgresStores(SqlStores[PostgresDatabase, PostgresNoteStore]):
    """The `Stores` of one PostgreSQL database."""

    def __init__(
        self, db: PostgresDatabase, options: StoreOptions, embedder: Embedder | None = None
    ) -> None:
        super().__init__(
            db,
            options,
            embedder,
            vector_tables=PostgresVectorTables(db),
            message_search=PostgresMessageSearch(db),
            note_store=PostgresNoteStore,
        )


async def open_stores(
    url: str,
    options: StoreOptions,
    *,
    embedder: Embedder | None = None,
    pool_size: int = 5,
    create: bool = True,
) -> PostgresStores:
    """Connect to the PostgreSQL database at `url`, create or migrate lorebot's schema
    (unless not `create`), and open its stores."""
    db = await PostgresDatabase.open(url, pool_size=pool_size, create=create)
    return PostgresStores(db, options, embedder)
