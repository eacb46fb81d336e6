"""The composition root: every service of one lorebot, built once and typed, each handed
what it needs by its constructor.

Building is plain and synchronous. What must be awaited or closed comes before, as the
`Bot`'s phases (the open stores, the model's client), and starting anything (adapters,
MCP servers, the scheduler, the replica's role) after.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from adapters.base import Adapter
from bot.actions.mcp import McpServer, McpServers
from bot.approvals.closing import Closings
from bot.approvals.reminders import Reminders
from bot.approvals.service import ApprovalService, build_approvals
from bot.config.settings import Settings, SystemdEnvironment
from bot.console.context import Console
from bot.console.site import ConsoleServer
from bot.context.skills import SkillUse, build_catalog
from bot.core.agent import Agent
from bot.core.dispatcher import Dispatcher
from bot.core.note_commands import NoteCommands
from bot.core.router import Router
from bot.daemon.leader_duties import LeaderDuties
from bot.daemon.replica import ReplicaRole, replica_id
from bot.daemon.supervision import Supervisor
from bot.jobs.context import JobContext
from bot.jobs.digest import DigestJob
from bot.jobs.maintenance import MaintenanceJob
from bot.jobs.patterns import PatternJob
from bot.jobs.reflection import ReflectionJob
from bot.jobs.runner import JobRunner
from bot.model.client import Model
from bot.tasks import TaskTracker
from bot.tools.actions import sync_server_tools
from bot.tools.base import Toolbox
from bot.tools.memory import memory_tools
from bot.tools.scripts import script_tools
from bot.tools.skills import skill_tools
from memory.clock import Clock
from memory.stores.leadership import Leadership
from memory.stores.stores import Stores
from skills.catalog import Catalog

Loop = tuple[str, Callable[[], Coroutine[Any, Any, object]]]


@dataclass(frozen=True, slots=True)
class Services:
    """What one lorebot is made of, below the lifecycle that the `Bot` owns."""

    stores: Stores
    model: Model
    approvals: ApprovalService
    catalog: Catalog
    toolbox: Toolbox
    mcp: McpServers
    agent: Agent
    commands: NoteCommands
    router: Router
    dispatcher: Dispatcher
    jobs: JobRunner
    reminders: Reminders
    replica_id: str  # this process among the replicas, as the inbox's claims name it


def build_services(
    settings: Settings,
    stores: Stores,
    model: Model,
    adapters: Mapping[str, Adapter],
    *,
    daemon: bool,
    answering: Callable[[], Collection[str]],
    clock: Clock,
    mcp_targets: Mapping[str, Any] | None = None,
) -> Services:
    """Every service, from the settings, the open stores, the model and the adapters.
    `daemon` is False for a one-shot command, whose turns wait for no MCP server and
    record no streamed reply; `answering` gives the platforms this replica answers on."""
    secrets = tuple(settings.secrets())  # never in a reply, a row or a log line
    closings = Closings()
    approvals = build_approvals(settings, stores, adapters, closings)
    catalog = build_catalog(settings.skills)
    catalog.refresh()
    skills = SkillUse(settings.skills, catalog, stores.active_skills)
    toolbox = Toolbox(
        [
            *memory_tools(stores.notes, stores.log, approvals),
            *skill_tools(skills, approvals, secrets=secrets),
            *script_tools(settings, skills, approvals, stores.actions),
        ]
    )

    def sync_tools(server: McpServer) -> None:  # a server's tools, as it lists them now
        sync_server_tools(
            toolbox,
            server,
            approvals,
            stores.actions,
            result_max_chars=settings.mcp.result_max_chars,
            secrets=secrets,
        )

    mcp = McpServers(settings.mcp, targets=mcp_targets, on_tools=sync_tools)
    agent = Agent(
        settings,
        model=model,
        notes=stores.notes,
        log=stores.log,
        reads=stores.turn_reads,
        skills=skills,
        toolbox=toolbox,
        events=stores.events,
        actions=stores.actions,
        slips=stores.slips,
        mcp=mcp if daemon else None,
    )
    commands = NoteCommands(stores.notes, approvals, model)
    router = Router(
        settings,
        adapters,
        agent=agent,
        commands=commands,
        skills=skills,
        approvals=approvals,
        closings=closings,
        live_replies=stores.live_replies if daemon else None,
        secrets=secrets,
    )
    holder = replica_id()
    dispatcher = Dispatcher(
        settings.bot,
        router=router,
        approvals=approvals,
        seen=stores.seen,
        inbox=stores.inbox,
        adapters=adapters,
        tasks=TaskTracker(),
        holder=holder,
        platforms=answering,
        secrets=secrets,
    )
    jobs = build_jobs(settings, stores, model, approvals, adapters, clock=clock)
    return Services(
        stores=stores,
        model=model,
        approvals=approvals,
        catalog=catalog,
        toolbox=toolbox,
        mcp=mcp,
        agent=agent,
        commands=commands,
        router=router,
        dispatcher=dispatcher,
        jobs=jobs,
        reminders=Reminders(
            stores.proposals,
            adapters,
            admins=frozenset(settings.bot.admins),
            after=timedelta(minutes=settings.bot.card_reminder_minutes),
            clock=clock,
        ),
        replica_id=holder,
    )


def build_jobs(
    settings: Settings,
    stores: Stores,
    model: Model,
    approvals: ApprovalService,
    adapters: Mapping[str, Adapter],
    *,
    clock: Clock,
) -> JobRunner:
    """The scheduled jobs on their runner, not yet started."""
    jobs = settings.jobs
    ctx = JobContext(
        settings=jobs,
        notes=stores.notes,
        log=stores.log,
        events=stores.events,
        runs=stores.job_runs,
        proposals=stores.proposals,
        approvals=approvals,
        model=model,
        adapters=adapters,
        clock=clock,
        seen=stores.seen,
        daily_logs=stores.daily_logs,
        inbox=stores.inbox,
    )
    return JobRunner(
        [ReflectionJob(ctx), PatternJob(ctx), DigestJob(ctx), MaintenanceJob(ctx)],
        ctx.runs,
        clock=clock,
        timezone=jobs.timezone,
        grace=timedelta(minutes=jobs.grace_minutes),
        retry_after=timedelta(minutes=jobs.retry_minutes),
    )


@dataclass(frozen=True, slots=True)
class DaemonRole:
    """What a daemon has beyond its services: the supervisor (health, systemd), the duties
    of the leading replica, and the role that takes and gives up the lead."""

    supervisor: Supervisor
    duties: LeaderDuties
    replica: ReplicaRole


def build_daemon_role(
    settings: Settings,
    services: Services,
    adapters: Mapping[str, Adapter],
    *,
    systemd: SystemdEnvironment,
    leadership: Leadership,
    leader_only: Sequence[str],
    loops: Sequence[Loop],
    clock: Clock,
    beat: bool,
) -> DaemonRole:
    """The daemon's role, built once its adapters started: `leader_only` are the platforms
    only the leader connects, `loops` what it runs while it leads, and `beat` whether the
    replica writes its heartbeat (not the one daemon of a SQLite file)."""
    supervisor = Supervisor(settings, systemd, adapters, services.model)
    for name in leader_only:  # until this replica leads, another holds them
        supervisor.release(name)
    duties = LeaderDuties(
        adapters=adapters,
        leader_only=leader_only,
        sink=services.dispatcher.submit,
        supervisor=supervisor,
        live_replies=services.stores.live_replies,
        inbox=services.stores.inbox,
        jobs=services.jobs if settings.jobs.enabled else None,
        steps=[services.approvals.expire],
        loops=loops,
    )
    replica = ReplicaRole(
        services.stores.replicas,
        leadership,
        on_lead=duties.lead,
        on_follow=duties.follow,
        clock=clock,
        beat=beat,
        replica=services.replica_id,
    )
    if settings.console.enabled:  # it says what another replica holds, and runs jobs here
        console = console_of(
            settings,
            services,
            clock,
            elsewhere=supervisor.elsewhere,
            leading=lambda: replica.leading,
        )
        supervisor.console = ConsoleServer(console)
    return DaemonRole(supervisor, duties, replica)


def console_of(
    settings: Settings,
    services: Services,
    clock: Clock,
    *,
    elsewhere: Collection[str] = (),
    leading: Callable[[], bool] = lambda: True,
) -> Console:
    """What the web console reads and changes: this daemon's own services; `elsewhere`
    are the platforms another replica connects now, `leading` whether this one leads."""
    return Console(
        settings=settings,
        stores=services.stores,
        approvals=services.approvals,
        dispatcher=services.dispatcher,
        model=services.model,
        adapters=services.dispatcher.adapters,
        jobs=services.jobs,
        catalog=services.catalog,
        clock=clock,
        elsewhere=elsewhere,
        leading=leading,
    )
