"""The times a model slipped in a turn, by kind, for `lorebot doctor`."""

from __future__ import annotations

from datetime import datetime

from memory.clock import Clock, utc_now
from memory.slips import KEEP_FOR
from memory.sqlite.database import SqliteDatabase, to_db_time


class SqliteModelSlips:
    """Slips of the model, with when and in which conversation."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def record(self, kind: str, conversation: str) -> None:
        """Count one slip of `kind`; slips older than `KEEP_FOR` are dropped meanwhile."""
        now = self.clock()
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO model_slips (at, kind, conversation) VALUES (?, ?, ?)",
                (to_db_time(now), kind, conversation),
            )
            await conn.execute(
                "DELETE FROM model_slips WHERE at < ?", (to_db_time(now - KEEP_FOR),)
            )

    async def fetch_counts_since(self, since: datetime) -> dict[str, int]:
        """How many slips of each kind happened at or after `since`."""
        async with self.db.conn.execute(
            "SELECT kind, count(*) FROM model_slips WHERE at >= ? GROUP BY kind ORDER BY kind",
            (to_db_time(since),),
        ) as cursor:
            return {kind: count async for kind, count in cursor}
