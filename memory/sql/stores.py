"""Every store of one database, on either engine. The stores a turn or a one-shot command
needs (notes, the conversation log, vectors) are built by the engine at once; the others
here, on first use, so `notes search` loads none of their modules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from memory.embedder import Embedder
from memory.sql.conversations import MessageSearch, SqlConversationLog
from memory.sql.notes import SqlNoteStore
from memory.sql.session import SqlDatabase
from memory.sql.vector_tables import VectorTables
from memory.sql.vectors import SqlVectorIndex
from memory.stores.stores import StoreOptions

if TYPE_CHECKING:
    from memory.sql.actions import SqlActionLog
    from memory.sql.active_skills import SqlActiveSkills
    from memory.sql.console import SqlConsoleSignIns
    from memory.sql.daily_logs import SqlDailyLogs
    from memory.sql.events import SqlEventLog
    from memory.sql.inbox import SqlInbox
    from memory.sql.job_runs import SqlJobRuns
    from memory.sql.live_replies import SqlLiveReplies
    from memory.sql.note_pages import SqlNotePages
    from memory.sql.proposals import SqlProposalStore
    from memory.sql.replicas import SqlReplicas
    from memory.sql.seen_events import SqlSeenEvents
    from memory.sql.slips import SqlModelSlips
    from memory.sql.turn_reads import SqlTurnReads

DB = TypeVar("DB", bound=SqlDatabase)
Notes = TypeVar("Notes", bound=SqlNoteStore)


class SqlStores(Generic[DB, Notes]):
    """The `Stores` of one database: what its engine built, and the rest written once."""

    def __init__(
        self,
        db: DB,
        options: StoreOptions,
        embedder: Embedder | None,
        *,
        vector_tables: VectorTables,
        message_search: MessageSearch,
        note_store: Callable[..., Notes],
    ) -> None:
        """The stores over `db`, given the engine's own parts: its vector tables, its
        message search, and its note store's class."""
        self.db = db
        self.options = options
        self.vectors = SqlVectorIndex(db, embedder, vector_tables)
        self.notes = note_store(
            db,
            clock=options.clock,
            max_note_bytes=options.max_note_bytes,
            index_max_lines=options.index_max_lines,
            index_max_bytes=options.index_max_bytes,
            vectors=self.vectors,
            secrets=options.secrets,
        )
        self.log = SqlConversationLog(
            db, message_search, clock=options.clock, secrets=options.secrets
        )

    # Each below imports its module when first asked for (see the module's docstring).

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
    def turn_reads(self) -> SqlTurnReads:
        from memory.sql.turn_reads import SqlTurnReads

        return SqlTurnReads(
            self.db,
            log=self.log,
            daily_logs=self.daily_logs,
            active_skills=self.active_skills,
            notes=self.notes,
        )

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

    @functools.cached_property
    def note_pages(self) -> SqlNotePages:
        from memory.sql.note_pages import SqlNotePages

        return SqlNotePages(self.db, clock=self.options.clock)

    @functools.cached_property
    def console(self) -> SqlConsoleSignIns:
        from memory.sql.console import SqlConsoleSignIns

        return SqlConsoleSignIns(self.db, clock=self.options.clock)

    async def close(self) -> None:
        await self.db.close()
        aclose = getattr(self.vectors.embedder, "aclose", None)
        if aclose is not None:
            await aclose()
