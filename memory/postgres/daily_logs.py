"""Each conversation's daily log: what the reflection job wrote of its day, shown to the
model on the next turns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memory.clock import Clock, utc_now
from memory.postgres.database import PostgresDatabase


class PostgresDailyLogs:
    """Daily logs by conversation and day."""

    def __init__(self, db: PostgresDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def write(self, conversation: str, day: date, content: str) -> None:
        """Write (or replace) the log of `conversation` for `day`."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO daily_logs (conversation, day, content, updated_at) VALUES "
                "(%s, %s, %s, %s) ON CONFLICT (conversation, day) DO UPDATE SET "
                "content = excluded.content, updated_at = excluded.updated_at",
                (conversation, day.isoformat(), content, self.clock()),
            )

    async def fetch(self, conversation: str, days: Sequence[date]) -> dict[date, str]:
        """The log entries of `conversation` for the given days that exist."""
        found = await self.db.rows(
            "SELECT day, content FROM daily_logs WHERE conversation = %s AND day = ANY(%s)",
            (conversation, [day.isoformat() for day in days]),
        )
        return {date.fromisoformat(row["day"]): row["content"] for row in found}
