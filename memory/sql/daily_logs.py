"""Each conversation's daily log: what the reflection job wrote of its day, shown to the
model on the next turns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memory.clock import Clock, utc_now
from memory.sql.session import SqlDatabase, marks


class SqlDailyLogs:
    """Daily logs by conversation and day."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def write(self, conversation: str, day: date, content: str) -> None:
        """Write (or replace) the log of `conversation` for `day`."""
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO daily_logs (conversation, day, content, updated_at) VALUES "
                "(?, ?, ?, ?) ON CONFLICT (conversation, day) DO UPDATE SET "
                "content = excluded.content, updated_at = excluded.updated_at",
                (conversation, day.isoformat(), content, self.db.dialect.time(self.clock())),
            )

    async def fetch(self, conversation: str, days: Sequence[date]) -> dict[date, str]:
        """The log entries of `conversation` for the given days that exist."""
        if not days:
            return {}
        async with self.db.reading() as sql:
            found = await sql.rows(
                "SELECT day, content FROM daily_logs WHERE conversation = ? "
                f"AND day IN ({marks(len(days))})",
                (conversation, *(day.isoformat() for day in days)),
            )
        return {date.fromisoformat(row["day"]): row["content"] for row in found}
