"""Every PostgreSQL store of one database: notes, the conversation log and vectors at once,
the others on first use, as on SQLite."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from memory.embedder import Embedder
from memory.postgres.database import PostgresDatabase
from memory.postgres.message_search import PostgresMessageSearch
from memory.postgres.notes import PostgresNoteStore
from memory.postgres.vector_tables import PostgresVectorTables
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.stores import StoreOptions

if TYPE_CHECKING:
    from memory.sql.actions import SqlActionLog
    from memory.sql.active_skills import SqlActiveSkills
    from memory.sql.daily_logs import SqlDailyLogs
    from memory.sql.events import SqlEventLog
    from memory.sql.inbox import SqlInbox
    from memory.sql.job_runs import SqlJobRuns
    from memory.sql.live_replies import SqlLiveReplies
    from memory.sql.proposals import SqlProposalStore
    from memory.sql.replicas import SqlReplicas
    from memory.sql.seen_events import SqlSeenEvents
    from memory.sql.slips import SqlModelSlips


class PostgresStores:
    """The stores of one PostgreSQL database."""

    def __init__(
        self, db: PostgresDatabase, options: StoreOptions, embedder: Embedder | None = None
    ) -> None:
        self.db = db
        self.options = options
        self.vectors = SqlVectorIndex(db, embedder, PostgresVectorTables(db))
        self.log = SqlConversationLog(
            db, PostgresMessageSearch(db), clock=options.clock, secrets=options.secrets
        )
        self.notes = PostgresNoteStore(
            db,
            clock=options.clock,
            max_note_bytes=options.max_note_bytes,
            index_max_lines=options.index_max_lines,
            index_max_bytes=options.index_max_bytes,
            vectors=self.vectors,
            secrets=options.secrets,
        )

    @functools.cached_property
    def proposals(self) -> SqlProposalStore:
        from memory.sql.proposals import SqlProposalStore

        return SqlProposalStore(self.db, self.notes, clock=self.options.clock)

    @functools.cached_property
    def actions(self) -> SqlActionLog:
        from memory.sql.actions import SqlActionLog

        return SqlActionLog(self.db, clock=self.options.clock, secrets=self.options.secrets)

    @functools.cached_property
    def events(self) -> SqlEventLog:
        from memory.sql.events import SqlEventLog

        return SqlEventLog(self.db, clock=self.options.clock, secrets=self.options.secrets)

    @functools.cached_property
    def job_runs(self) -> SqlJobRuns:
        from memory.sql.job_runs import SqlJobRuns

        return SqlJobRuns(self.db, clock=self.options.clock)

    @functools.cached_property
    def seen(self) -> SqlSeenEvents:
        from memory.sql.seen_events import SqlSeenEvents

        return SqlSeenEvents(self.db, clock=self.options.clock)

    @functools.cached_property
    def live_replies(self) -> SqlLiveReplies:
        from memory.sql.live_replies import SqlLiveReplies

        return SqlLiveReplies(self.db, clock=self.options.clock)

    @functools.cached_property
    def daily_logs(self) -> SqlDailyLogs:
        from memory.sql.daily_logs import SqlDailyLogs

        return SqlDailyLogs(self.db, clock=self.options.clock)

    @functools.cached_property
    def active_skills(self) -> SqlActiveSkills:
        from memory.sql.active_skills import SqlActiveSkills

        return SqlActiveSkills(self.db, clock=self.options.clock)

    @functools.cached_property
    def slips(self) -> SqlModelSlips:
        from memory.sql.slips import SqlModelSlips

        return SqlModelSlips(self.db, clock=self.options.clock)

    @functools.cached_property
    def inbox(self) -> SqlInbox:
        from memory.sql.inbox import SqlInbox

        return SqlInbox(self.db, clock=self.options.clock)

    @functools.cached_property
    def replicas(self) -> SqlReplicas:
        from memory.sql.replicas import SqlReplicas

        return SqlReplicas(self.db)

    async def close(self) -> None:
        await self.db.close()
        aclose = getattr(self.vectors.embedder, "aclose", None)
        if aclose is not None:
            await aclose()


async def open_stores(
    url: str,
    options: StoreOptions,
    *,
    embedder: Embedder | None = None,
    pool_size: int = 5,
    create: bool = True,
) -> PostgresStores:
    """Connect to the PostgreSQL database at `url`, create or migrate lorebot's schema
    (unless not `create`), and open its stores."""
    db = await PostgresDatabase.open(url, pool_size=pool_size, create=create)
    return PostgresStores(db, options, embedder)
