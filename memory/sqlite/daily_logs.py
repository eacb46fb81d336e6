"""Each conversation's daily log: what the reflection job wrote of its day, shown to the
model on the next turns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memory.clock import Clock, utc_now
from memory.sqlite.database import SqliteDatabase, to_db_time


class SqliteDailyLogs:
    """Daily logs by conversation and day."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def write(self, conversation: str, day: date, content: str) -> None:
        """Write (or replace) the log of `conversation` for `day`."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO daily_logs (conversation, day, content, updated_at) VALUES "
                "(?, ?, ?, ?) ON CONFLICT (conversation, day) DO UPDATE SET "
                "content = excluded.content, updated_at = excluded.updated_at",
                (conversation, day.isoformat(), content, to_db_time(self.clock())),
            )

    async def fetch(self, conversation: str, days: Sequence[date]) -> dict[date, str]:
        """The log entries of `conversation` for the given days that exist."""
        wanted = [day.isoformat() for day in days]
        async with self.db.conn.execute(
            "SELECT day, content FROM daily_logs WHERE conversation = ? AND day IN "
            f"({', '.join('?' for _ in wanted)})",
            (conversation, *wanted),
        ) as cursor:
            return {date.fromisoformat(day): content for day, content in await cursor.fetchall()}
