"""The Bot: builds the core from settings and owns its lifecycle on one AsyncExitStack.

Startup runs in phases: lock and open the database, open the model's client, build every
service (`bot/daemon/services.py`), start the background work and the adapters, then take
up the daemon's role (MCP servers, the replica and the leader's duties, the supervisor).
Shutdown runs in a fixed order (stop taking events, drain, close adapters, close the model,
close the database last) and is safe to call twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

from adapters.base import Adapter
from bot.actions.mcp import McpServers
from bot.approvals.service import ApprovalService
from bot.config.settings import Settings, SystemdEnvironment
from bot.console.site import ConsoleServer
from bot.core.agent import Agent
from bot.core.dispatcher import Dispatcher
from bot.core.router import Router
from bot.daemon.lockfile import DatabaseLock
from bot.daemon.notify import Notifier, start_extended
from bot.daemon.platforms import leader_only
from bot.daemon.replica import ReplicaRole
from bot.daemon.services import DaemonRole, Services, build_daemon_role, build_services
from bot.daemon.supervision import Supervisor
from bot.jobs.runner import JobRunner
from bot.model.client import Model
from bot.model.response_formats import ResponseFormats
from bot.storage import Engine, engine_for, open_memory
from bot.tasks import TaskTracker, stop_if_asked
from bot.tools.base import Toolbox
from memory import NoteStore
from memory.clock import Clock, utc_now
from memory.embedder import Embedder
from memory.stores.actions import ActionLog
from memory.stores.active_skills import ActiveSkills
from memory.stores.conversations import ConversationLog
from memory.stores.daily_logs import DailyLogs
from memory.stores.database import Database
from memory.stores.events import EventLog
from memory.stores.proposals import ProposalStore
from memory.stores.seen_events import SeenEvents
from memory.stores.stores import Stores
from memory.stores.vectors import VectorIndex
from skills.catalog import Catalog

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
        self._services: Services | None = None  # once started
        self._role: DaemonRole | None = None  # a daemon's, once its adapters started
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
        engine = engine_for(self.settings)
        alone = self.daemon and not engine.shared  # the one process of a SQLite file
        if alone:
            self._lock_database()
        stores = await self._open_storage()
        services = self._services = build_services(
            self.settings,
            stores,
            self._open_model(),
            self.adapters,
            daemon=self.daemon,
            answering=self._answering,
            clock=self.clock,
            mcp_targets=self.mcp_targets,
        )
        if alone:  # the claims left are a stopped daemon's: its events are taken up now
            await stores.inbox.release_all()
        self._start_background(services)
        await self._start_adapters(services)
        if self.daemon:
            await self._start_daemon(services, engine, alone)
        else:
            self._start_one_shot(services)

    def _lock_database(self) -> None:
        lock = DatabaseLock(self.settings.database.path)
        lock.acquire()
        self._stack.callback(lock.release)

    async def _open_storage(self) -> Stores:
        """Open the stores, telling systemd that a long migration is no hang; closed last."""
        notifier = Notifier(self.systemd.notify_socket)
        try:
            async with start_extended(notifier, "opening the database"):
                stores = await open_memory(self.settings, clock=self.clock, embedder=self.embedder)
        finally:
            notifier.close()
        self._stack.push_async_callback(stores.close)
        return stores

    def _open_model(self) -> Model:
        settings = self.settings
        model = Model(
            settings.model_server,
            max_concurrent=settings.bot.max_concurrent_model_calls,
            formats=ResponseFormats.beside(settings.database.path),
        )
        self._stack.push_async_callback(model.close)
        return model

    def _start_background(self, services: Services) -> None:
        """A daemon's work beside the events: filling the vectors, probing the model."""
        self._stack.push_async_callback(self.tasks.cancel_all)
        if services.stores.vectors.embedder is not None and self.daemon:
            self.tasks.spawn(services.stores.vectors.run(), name="embedding")
        if self.daemon:  # start-up never waits for the model: it is probed meanwhile
            self.tasks.spawn(services.model.watch(), name="model probe")

    async def _start_adapters(self, services: Services) -> None:
        """Start every adapter but the leader-only ones, which the leading replica starts."""
        held = self._leader_only()
        for adapter in self.adapters.values():
            if adapter.platform in held:
                continue
            self._stack.push_async_callback(adapter.close)
            await adapter.start(services.dispatcher.submit)
            _log.info("adapter %s started", adapter.platform)

    def _start_one_shot(self, services: Services) -> None:
        """A one-shot command's work (`jobs run`): its jobs, when on, and renewing its own
        claims; it takes up nobody else's events and, as scheduled jobs, runs no actions."""
        if self.settings.jobs.enabled:
            services.jobs.start()
            self._stack.push_async_callback(services.jobs.shutdown)
            self.tasks.spawn(services.jobs.catch_up(), name="job catch-up")
        self._stack.push_async_callback(self._drain)
        self.tasks.spawn(services.dispatcher.keep(sweep=False), name="inbox")

    async def _start_daemon(self, services: Services, engine: Engine, alone: bool) -> None:
        """Serve the MCP servers, lead or follow among the replicas, and be supervised."""
        self._stack.push_async_callback(self._leave)  # after the turns in flight are done
        self._stack.push_async_callback(self._drain)
        for server in services.mcp.servers.values():
            self.tasks.spawn(server.run(), name=f"MCP server {server.name}")
        self._stack.push_async_callback(services.mcp.stop)
        role = self._role = build_daemon_role(
            self.settings,
            services,
            self.adapters,
            systemd=self.systemd,
            leadership=engine.leadership(),
            leader_only=self._leader_only(),
            loops=[
                ("proposal follow-ups", self._follow_up_forever),
                ("card reminders", services.reminders.forever),
            ],
            clock=self.clock,
            beat=not alone,
        )
        try:
            if await role.replica.begin():  # leading at once: start as the only lorebot does
                await role.duties.started()
        except BaseException:
            await role.duties.follow()
            await role.replica.leadership.release()
            raise
        self._replica = self.tasks.spawn(role.replica.run(), name="replica")
        self.tasks.spawn(services.dispatcher.keep(), name="inbox")
        await role.supervisor.start()
        self._stack.push_async_callback(role.supervisor.stop)
        self.tasks.spawn(role.supervisor.watch(), name="watchdog")

    def _leader_only(self) -> list[str]:
        """The platforms only the leading replica connects (none for a one-shot command)."""
        return [name for name in self.adapters if self.daemon and leader_only(name)]

    def _answering(self) -> list[str]:
        """The platforms this replica answers on now: a standby has no leader-only ones."""
        connected = self._role.duties.connected if self._role is not None else ()
        held = self._leader_only()
        return [p for p in self.adapters if p not in held or p in connected]

    async def _leave(self) -> None:
        """Stop leading and leave the replicas: the lock goes, with the row."""
        if self._replica is not None:
            self._replica.cancel()
            await asyncio.gather(self._replica, return_exceptions=True)

    async def follow_up(self) -> int:
        """Finish proposals decided elsewhere (`lorebot proposals approve`, or before a
        restart): edit their cards and resume their turns. Returns how many."""
        done = 0
        services = self.services
        for proposal in await services.stores.proposals.fetch_to_follow_up(list(self.adapters)):
            try:
                await services.router.after_decision(proposal)
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

    async def _drain(self) -> None:
        dispatcher = self.services.dispatcher
        dispatcher.stop_accepting()
        try:
            async with asyncio.timeout(self.settings.bot.shutdown_timeout_s):
                await dispatcher.wait_idle()
        except TimeoutError:
            _log.warning(
                "stopped before finishing %d conversation(s); their turns in flight are cut "
                "short, and events still waiting are handled at the next start or by "
                "another replica",
                dispatcher.pending,
            )
            await dispatcher.tasks.cancel_all()

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

    # --- the parts of a started bot, as commands, tests and benchmarks read them ---

    @property
    def services(self) -> Services:
        """Every service of the bot, built by `start`."""
        if self._services is None:
            raise RuntimeError("the bot has not started")
        return self._services

    @property
    def role(self) -> DaemonRole:
        """The daemon's supervisor, leader's duties and replica role, taken up by `start`."""
        if self._role is None:
            raise RuntimeError("the bot has not started as a daemon")
        return self._role

    @property
    def stores(self) -> Stores:
        return self.services.stores

    @property
    def db(self) -> Database:
        return self.services.stores.db

    @property
    def notes(self) -> NoteStore:
        return self.services.stores.notes

    @property
    def log(self) -> ConversationLog:
        return self.services.stores.log

    @property
    def daily_logs(self) -> DailyLogs:
        return self.services.stores.daily_logs

    @property
    def vectors(self) -> VectorIndex:
        return self.services.stores.vectors

    @property
    def proposals(self) -> ProposalStore:
        return self.services.stores.proposals

    @property
    def actions(self) -> ActionLog:
        return self.services.stores.actions

    @property
    def events(self) -> EventLog:
        return self.services.stores.events

    @property
    def seen(self) -> SeenEvents:
        return self.services.stores.seen

    @property
    def active_skills(self) -> ActiveSkills:
        return self.services.stores.active_skills

    @property
    def model(self) -> Model:
        return self.services.model

    @property
    def approvals(self) -> ApprovalService:
        return self.services.approvals

    @property
    def catalog(self) -> Catalog:
        return self.services.catalog

    @property
    def toolbox(self) -> Toolbox:
        return self.services.toolbox

    @property
    def mcp(self) -> McpServers:
        return self.services.mcp

    @property
    def agent(self) -> Agent:
        return self.services.agent

    @property
    def router(self) -> Router:
        return self.services.router

    @property
    def dispatcher(self) -> Dispatcher:
        return self.services.dispatcher

    @property
    def jobs(self) -> JobRunner:
        return self.services.jobs

    @property
    def supervisor(self) -> Supervisor:
        return self.role.supervisor

    @property
    def console(self) -> ConsoleServer | None:
        """The web console, when it is on."""
        return self.role.supervisor.console

    @property
    def replica(self) -> ReplicaRole:
        return self.role.replica
