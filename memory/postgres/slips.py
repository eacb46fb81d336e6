"""The times a model slipped in a turn, by kind, for `lorebot doctor`."""

from __future__ import annotations

from datetime import datetime

from memory.clock import Clock, utc_now
from memory.postgres.database import PostgresDatabase
from memory.slips import KEEP_FOR


class PostgresModelSlips:
    """Slips of the model, with when and in which conversation."""

    def __init__(self, db: PostgresDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def record(self, kind: str, conversation: str) -> None:
        """Count one slip of `kind`; slips older than `KEEP_FOR` are dropped meanwhile."""
        now = self.clock()
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO model_slips (at, kind, conversation) VALUES (%s, %s, %s)",
                (now, kind, conversation),
            )
            await conn.execute("DELETE FROM model_slips WHERE at < %s", (now - KEEP_FOR,))

    async def fetch_counts_since(self, since: datetime) -> dict[str, int]:
        """How many slips of each kind happened at or after `since`."""
        found = await self.db.rows(
            "SELECT kind, count(*) AS n FROM model_slips WHERE at >= %s GROUP BY kind "
            "ORDER BY kind",
            (since,),
        )
        return {row["kind"]: int(row["n"]) for row in found}
