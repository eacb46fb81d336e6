"""The Bot: builds the core from settings and owns its lifecycle on one AsyncExitStack.

Startup opens SQLite, probes the model and starts the adapters; shutdown runs in a fixed
order (stop taking events, drain, close adapters, close the model, close SQLite last) and
is safe to call twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from types import TracebackType
from typing import Any

from adapters.base import Adapter
from bot.actions.mcp import McpServer, McpServers
from bot.approvals.service import build_approvals
from bot.config.settings import Settings, SystemdEnvironment
from bot.context.skills import SkillUse, build_catalog
from bot.core.agent import Agent
from bot.core.dispatcher import Dispatcher
from bot.core.note_commands import NoteCommands
from bot.core.router import Router
from bot.daemon.leader_duties import LeaderDuties
from bot.daemon.lockfile import DatabaseLock
from bot.daemon.notify import Notifier, start_extended
from bot.daemon.platforms import leader_only
from bot.daemon.replica import ReplicaRole, replica_id
from bot.daemon.supervision import Supervisor
from bot.jobs.context import JobContext
from bot.jobs.digest import DigestJob
from bot.jobs.maintenance import MaintenanceJob
from bot.jobs.patterns import PatternJob
from bot.jobs.reflection import ReflectionJob
from bot.jobs.runner import Job, JobRunner
from bot.model.client import Model
from bot.model.response_formats import ResponseFormats
from bot.storage import engine_for, open_memory
from bot.tasks import TaskTracker, stop_if_asked
from bot.tools.actions import sync_server_tools
from bot.tools.base import Toolbox
from bot.tools.memory import memory_tools
from bot.tools.scripts import script_tools
from bot.tools.skills import skill_tools
from memory.clock import Clock, utc_now
from memory.embedder import Embedder

_log = logging.getLogger(__name__)

# How often the daemon looks for proposals decided from the shell.
FOLLOW_UP_INTERVAL_S = 2.0


class Bot:
    """One running lorebot: storage, model, core, dispatcher and adapters."""

    def __init__(
        self,
        settings: Settings,
        adapters: Sequence[Adapter],
        *,
        clock: Clock = utc_now,
        systemd: SystemdEnvironment | None = None,
        embedder: Embedder | None = None,
        daemon: bool = True,
        mcp_targets: Mapping[str, Any] | None = None,
    ) -> None:
        # In-process MCP servers by name, standing in for configured ones (tests).
        self.mcp_targets = mcp_targets
        # daemon=False: a one-shot command (`jobs run`) beside a running daemon: no
        # database lock, no health endpoint or watchdog, no background work of its own.
        self.daemon = daemon
        self.embedder = embedder  # None: the one `ollama.embed_model` names, if any
        self.systemd = systemd or SystemdEnvironment(None, None)
        self.settings = settings
        self.adapters = {adapter.platform: adapter for adapter in adapters}
        self.clock = clock
        self.tasks = TaskTracker()
        self._stack = AsyncExitStack()
        self._started = False
        self._stopped = False
        self._replica: asyncio.Task[None] | None = None  # the replica's loop, once it runs

    async def start(self) -> None:
        """Open storage, probe the model, start the adapters; on failure undo what started."""
        if self._started:
            return
        self._started = True
        try:
            await self._start()
        except BaseException:
            self._stopped = True
            await self._stack.aclose()
            raise

    async def _start(self) -> None:
        settings = self.settings
        engine = engine_for(settings)
        alone = self.daemon and not engine.shared
        if alone:
            lock = DatabaseLock(settings.database.path)
            lock.acquire()
            self._stack.callback(lock.release)
        notifier = Notifier(self.systemd.notify_socket)
        try:
            async with start_extended(notifier, "opening the database"):
                stores = await open_memory(settings, clock=self.clock, embedder=self.embedder)
        finally:
            notifier.close()
        self._stack.push_async_callback(stores.close)  # closed last
        self.stores = stores
        self.db = stores.db
        self.notes = stores.notes
        self.log = stores.log
        self.vectors = stores.vectors
        self.secrets = tuple(settings.secrets())
        self.events = stores.events
        self.seen = stores.seen
        self.active_skills = stores.active_skills
        self.daily_logs = stores.daily_logs
        self.proposals = stores.proposals
        self.model = Model(
            settings.model_server,
            max_concurrent=settings.bot.max_concurrent_model_calls,
            formats=ResponseFormats.beside(settings.database.path),
        )
        self._stack.push_async_callback(self.model.close)
        self.actions = stores.actions
        self.approvals = build_approvals(settings, stores, self.adapters)
        self.catalog = build_catalog(settings.skills)
        self.catalog.refresh()
        skills = SkillUse(settings.skills, self.catalog, self.active_skills)
        self.toolbox = Toolbox(
            [
                *memory_tools(self.notes, self.log, self.approvals),
                *skill_tools(skills, self.approvals),
                *script_tools(settings, skills, self.approvals, self.actions),
            ]
        )
        self.agent = Agent(
            settings, self.model, self.notes, self.log, self.daily_logs, skills, self.toolbox,
            self.events, self.actions, stores.slips,
        )  # fmt: skip
        self.mcp = McpServers(settings.mcp, targets=self.mcp_targets, on_tools=self._sync_tools)
        self.live_replies = stores.live_replies
        self.commands = NoteCommands(self.notes, self.approvals, self.model)
        self.router = Router(
            settings,
            self.adapters,
            agent=self.agent,
            commands=self.commands,
            skills=skills,
            approvals=self.approvals,
            live_replies=self.live_replies if self.daemon else None,
            secrets=self.secrets,
        )
        self.approvals.on_closed = self.router.after_decision
        if alone:  # the claims left are a stopped daemon's: its events are taken up now
            await stores.inbox.release_all()
        # Leader-only platforms are connected by the leading replica alone.
        held_elsewhere = [name for name in self.adapters if self.daemon and leader_only(name)]
        self.replica_id = replica_id()
        self.duties: LeaderDuties | None = None
        self.dispatcher = Dispatcher(
            settings.bot, self.router, self.approvals, self.seen, stores.inbox, self.adapters,
            TaskTracker(), holder=self.replica_id, platforms=self._answering, secrets=self.secrets,
        )  # fmt: skip
        self._stack.push_async_callback(self.tasks.cancel_all)
        if self.vectors.embedder is not None and self.daemon:
            self.tasks.spawn(self.vectors.run(), name="embedding")
        if self.daemon:  # start-up never waits for the model: it is probed meanwhile
            self.tasks.spawn(self.model.watch(), name="model probe")
        for adapter in self.adapters.values():
            if adapter.platform in held_elsewhere:
                continue
            self._stack.push_async_callback(adapter.close)
            await adapter.start(self.dispatcher.submit)
            _log.info("adapter %s started", adapter.platform)
        self.jobs = self._build_jobs()
        if not self.daemon:  # scheduled jobs and one-shot commands never run actions
            if settings.jobs.enabled:
                self.jobs.start()
                self._stack.push_async_callback(self.jobs.shutdown)
                self.tasks.spawn(self.jobs.catch_up(), name="job catch-up")
            self._stack.push_async_callback(self._drain)
            # A one-shot command renews its own claims; it takes up nobody else's events.
            self.tasks.spawn(self.dispatcher.keep(sweep=False), name="inbox")
            return
        self._stack.push_async_callback(self._leave)  # after the turns in flight are done
        self._stack.push_async_callback(self._drain)
        for server in self.mcp.servers.values():
            self.tasks.spawn(server.run(), name=f"MCP server {server.name}")
        self.agent.mcp = self.mcp  # a turn waits for the servers' first connection
        self._stack.push_async_callback(self.mcp.stop)
        self.supervisor = Supervisor(settings, self.systemd, self.adapters, self.model)
        for name in held_elsewhere:
            self.supervisor.release(name)
        self.duties = LeaderDuties(
            self.adapters, held_elsewhere, self.dispatcher.submit, self.supervisor,
            self.live_replies, stores.inbox, self.jobs if settings.jobs.enabled else None,
            [self.approvals.expire], [("proposal follow-ups", self._follow_up_forever)],
        )  # fmt: skip
        self.replica = ReplicaRole(
            stores.replicas, engine.leadership(), self.duties.lead, self.duties.follow,
            clock=self.clock, beat=not alone, replica=self.replica_id,
        )  # fmt: skip
        try:
            if await self.replica.begin():  # leading at once: start as the only lorebot does
                await self.duties.started()
        except BaseException:
            await self.duties.follow()
            await self.replica.leadership.release()
            raise
        self._replica = self.tasks.spawn(self.replica.run(), name="replica")
        self.tasks.spawn(self.dispatcher.keep(), name="inbox")
        await self.supervisor.start()
        self._stack.push_async_callback(self.supervisor.stop)
        self.tasks.spawn(self.supervisor.watch(), name="watchdog")

    def _answering(self) -> list[str]:
        """The platforms this replica answers on now: a standby has no leader-only ones."""
        connected = self.duties.connected if self.duties is not None else ()
        return [p for p in self.adapters if not (self.daemon and leader_only(p)) or p in connected]

    async def _leave(self) -> None:
        """Stop leading and leave the replicas: the lock goes, with the row."""
        if self._replica is not None:
            self._replica.cancel()
            await asyncio.gather(self._replica, return_exceptions=True)

    def _sync_tools(self, server: McpServer) -> None:
        sync_server_tools(
            self.toolbox, server, self.approvals, self.actions,
            result_max_chars=self.settings.mcp.result_max_chars, secrets=self.secrets,
        )  # fmt: skip

    async def follow_up(self) -> int:
        """Finish proposals decided elsewhere (`lorebot proposals approve`, or before a
        restart): edit their cards and resume their turns. Returns how many."""
        done = 0
        for proposal in await self.proposals.fetch_to_follow_up(list(self.adapters)):
            try:
                await self.router.after_decision(proposal)
                done += 1
            except Exception:
                _log.exception("could not finish proposal %d", proposal.id)
        return done

    async def _follow_up_forever(self) -> None:
        while True:
            try:
                await self.follow_up()
            except Exception:  # the database may be busy; the next round tries again
                _log.exception("could not look for decided proposals")
            # A stop that arrived inside a round, where a library below turned it into an
            # error or took it in, still ends the loop: else `stop()` waits for it forever.
            stop_if_asked()
            await asyncio.sleep(FOLLOW_UP_INTERVAL_S)

    def _build_jobs(self) -> JobRunner:
        settings = self.settings.jobs
        ctx = JobContext(
            settings, self.notes, self.log, self.events, self.stores.job_runs,
            self.proposals, self.approvals, self.model, self.adapters, self.clock, self.seen,
            self.daily_logs, self.stores.inbox,
        )  # fmt: skip
        jobs: list[Job] = [ReflectionJob(ctx), PatternJob(ctx), DigestJob(ctx), MaintenanceJob(ctx)]
        return JobRunner(
            jobs,
            ctx.runs,
            clock=self.clock,
            timezone=settings.timezone,
            grace=timedelta(minutes=settings.grace_minutes),
            retry_after=timedelta(minutes=settings.retry_minutes),
        )

    async def _drain(self) -> None:
        self.dispatcher.stop_accepting()
        try:
            async with asyncio.timeout(self.settings.bot.shutdown_timeout_s):
                await self.dispatcher.wait_idle()
        except TimeoutError:
            _log.warning(
                "stopped before finishing %d conversation(s); their turns in flight are cut "
                "short, and events still waiting are handled at the next start or by "
                "another replica",
                self.dispatcher.pending,
            )
            await self.dispatcher.tasks.cancel_all()

    async def stop(self) -> None:
        """Shut down in order; safe to call twice."""
        if self._stopped or not self._started:
            return
        self._stopped = True
        await self._stack.aclose()

    async def __aenter__(self) -> Bot:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
