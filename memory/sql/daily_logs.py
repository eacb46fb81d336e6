"""Each conversation's daily log: what the reflection job wrote of its day, shown to the
model on the next turns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memory.clock import Clock, utc_now
from memory.sql.session import Query, SqlDatabase, Statement, fetch_one, marks


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
        return await fetch_one(self.db, self.fetch_query(conversation, days))

    def fetch_query(self, conversation: str, days: Sequence[date]) -> Query[dict[date, str]]:
        if not days:
            return Query((), lambda _: {})
        statement = Statement(
            "SELECT day, content FROM daily_logs WHERE conversation = ? "
            f"AND day IN ({marks(len(days))})",
            (conversation, *(day.isoformat() for day in days)),
        )
        return Query(
            [statement],
            lambda found: {date.fromisoformat(r["day"]): r["content"] for r in found[0].rows},
        )
