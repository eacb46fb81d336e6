"""The times a model slipped in a turn, by kind, for `lorebot doctor`."""

from __future__ import annotations

from datetime import datetime

from memory.clock import Clock, utc_now
from memory.sql.session import SqlDatabase
from memory.stores.slips import KEEP_FOR


class SqlModelSlips:
    """Slips of the model, with when and in which conversation."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock
        self.time = db.dialect.time

    async def record(self, kind: str, conversation: str) -> None:
        """Count one slip of `kind`; slips older than `KEEP_FOR` are dropped meanwhile."""
        now = self.clock()
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO model_slips (at, kind, conversation) VALUES (?, ?, ?)",
                (self.time(now), kind, conversation),
            )
            await sql.run("DELETE FROM model_slips WHERE at < ?", (self.time(now - KEEP_FOR),))

    async def fetch_counts_since(self, since: datetime) -> dict[str, int]:
        """How many slips of each kind happened at or after `since`."""
        async with self.db.reading() as sql:
            found = await sql.rows(
                "SELECT kind, count(*) AS n FROM model_slips WHERE at >= ? GROUP BY kind "
                "ORDER BY kind",
                (self.time(since),),
            )
        return {row["kind"]: int(row["n"]) for row in found}
