"""A turn's reads (`memory.stores.turn_reads`) as one batch of the stores' own queries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memory.policy.visibility import Visibility
from memory.sql.active_skills import SqlActiveSkills
from memory.sql.conversations import SqlConversationLog
from memory.sql.daily_logs import SqlDailyLogs
from memory.sql.notes import SqlNoteStore
from memory.sql.session import Result, SqlDatabase
from memory.stores.turn_reads import TurnReading


class SqlTurnReads:
    """Reads a turn's history, daily logs, active skills and scope indexes in one batch
    (the indexes' notes in a second only when the cached ones are stale)."""

    def __init__(
        self,
        db: SqlDatabase,
        *,
        log: SqlConversationLog,
        daily_logs: SqlDailyLogs,
        active_skills: SqlActiveSkills,
        notes: SqlNoteStore,
    ) -> None:
        self.db = db
        self.log = log
        self.daily_logs = daily_logs
        self.active_skills = active_skills
        self.notes = notes

    async def fetch(
        self,
        history_key: str,
        conversation: str,
        days: Sequence[date],
        visibility: Visibility,
    ) -> TurnReading:
        history = self.log.history_query(history_key)
        daily = self.daily_logs.fetch_query(history_key, days)
        active = self.active_skills.fetch_query(conversation)
        index_statements = self.notes.index_statements(visibility)
        async with self.db.reading() as sql:
            found: Sequence[Result] = await sql.batch(
                [
                    *history.statements,
                    *daily.statements,
                    *active.statements,
                    *index_statements,
                ]
            )
            read_history, found = history.split(found)
            read_daily, found = daily.split(found)
            read_active, found = active.split(found)
            indexes = await self.notes.indexes_from(sql, visibility, found)
        return TurnReading(read_history, read_daily, read_active, indexes)
