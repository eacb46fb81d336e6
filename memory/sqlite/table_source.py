"""A SQLite database's tables as a `TableSource`, for `lorebot db copy`: rows as stored."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from memory.sqlite.database import SqliteDatabase
from memory.transfer.engine_copy import BATCH


class SqliteTableSource:
    """The tables of one open SQLite database."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self.where = str(db.path)

    async def columns(self, table: str) -> list[str]:
        async with self.db.conn.execute(
            "SELECT name FROM pragma_table_info(?) ORDER BY cid", (table,)
        ) as cursor:
            return [row[0] for row in await cursor.fetchall()]

    async def count(self, table: str) -> int:
        return int(await self.db.scalar(f"SELECT count(*) FROM {table}"))

    async def batches(
        self, table: str, columns: Sequence[str], size: int = BATCH
    ) -> AsyncIterator[list[tuple[object, ...]]]:
        order = "ORDER BY id" if "id" in columns else ""
        async with self.db.conn.execute(
            f"SELECT {', '.join(columns)} FROM {table} {order}"
        ) as cursor:
            while batch := await cursor.fetchmany(size):
                yield [tuple(row) for row in batch]
