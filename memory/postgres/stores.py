"""Every PostgreSQL store of one database, each built on first use, as on SQLite."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from memory.postgres.conversations import PostgresConversationLog
from memory.postgres.database import PostgresDatabase
from memory.stores import StoreOptions

if TYPE_CHECKING:
    from memory.postgres.actions import PostgresActionLog
    from memory.postgres.active_skills import PostgresActiveSkills
    from memory.postgres.daily_logs import PostgresDailyLogs
    from memory.postgres.events import PostgresEventLog
    from memory.postgres.job_runs import PostgresJobRuns
    from memory.postgres.live_replies import PostgresLiveReplies
    from memory.postgres.seen_events import PostgresSeenEvents
    from memory.postgres.slips import PostgresModelSlips


class PostgresStores:
    """The stores of one PostgreSQL database."""

    def __init__(self, db: PostgresDatabase, options: StoreOptions) -> None:
        self.db = db
        self.options = options
        self.log = PostgresConversationLog(db, clock=options.clock, secrets=options.secrets)

    @functools.cached_property
    def actions(self) -> PostgresActionLog:
        from memory.postgres.actions import PostgresActionLog

        return PostgresActionLog(self.db, clock=self.options.clock, secrets=self.options.secrets)

    @functools.cached_property
    def events(self) -> PostgresEventLog:
        from memory.postgres.events import PostgresEventLog

        return PostgresEventLog(self.db, clock=self.options.clock, secrets=self.options.secrets)

    @functools.cached_property
    def job_runs(self) -> PostgresJobRuns:
        from memory.postgres.job_runs import PostgresJobRuns

        return PostgresJobRuns(self.db, clock=self.options.clock)

    @functools.cached_property
    def seen(self) -> PostgresSeenEvents:
        from memory.postgres.seen_events import PostgresSeenEvents

        return PostgresSeenEvents(self.db, clock=self.options.clock)

    @functools.cached_property
    def live_replies(self) -> PostgresLiveReplies:
        from memory.postgres.live_replies import PostgresLiveReplies

        return PostgresLiveReplies(self.db, clock=self.options.clock)

    @functools.cached_property
    def daily_logs(self) -> PostgresDailyLogs:
        from memory.postgres.daily_logs import PostgresDailyLogs

        return PostgresDailyLogs(self.db, clock=self.options.clock)

    @functools.cached_property
    def active_skills(self) -> PostgresActiveSkills:
        from memory.postgres.active_skills import PostgresActiveSkills

        return PostgresActiveSkills(self.db, clock=self.options.clock)

    @functools.cached_property
    def slips(self) -> PostgresModelSlips:
        from memory.postgres.slips import PostgresModelSlips

        return PostgresModelSlips(self.db, clock=self.options.clock)

    async def close(self) -> None:
        await self.db.close()
