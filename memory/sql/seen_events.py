"""The platform events lorebot has taken, by their id, for a day: a Slack retry or a gateway
replay of one of them is dropped, whichever replica it reaches."""

from __future__ import annotations

from datetime import timedelta

from memory.clock import Clock, utc_now
from memory.sql.session import SqlDatabase


class SqlSeenEvents:
    """Event ids seen, with when."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock
        self.time = db.dialect.time

    async def first_sighting(self, key: str) -> bool:
        """Record a platform event id; False when it was already seen (a retry or replay)."""
        async with self.db.transaction() as sql:
            changed = await sql.run(
                "INSERT INTO seen_events (key, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (key, self.time(self.clock())),
            )
        return changed == 1

    async def seen(self, key: str) -> bool:
        """Whether a platform event id was recorded already."""
        async with self.db.reading() as sql:
            found = await sql.row("SELECT 1 FROM seen_events WHERE key = ?", (key,))
        return found is not None

    async def forget_sighting(self, key: str) -> None:
        """Forget one event id, so the same id counts as new when it comes again."""
        async with self.db.transaction() as sql:
            await sql.run("DELETE FROM seen_events WHERE key = ?", (key,))

    async def forget_seen_before(self, age: timedelta = timedelta(days=1)) -> int:
        """Drop event ids older than `age`; a replay that late is not expected."""
        async with self.db.transaction() as sql:
            return await sql.run(
                "DELETE FROM seen_events WHERE seen_at < ?", (self.time(self.clock() - age),)
            )
