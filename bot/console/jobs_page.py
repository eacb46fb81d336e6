"""The jobs page: each job's schedules with their next and last run, the latest runs and
their outcomes, and "run now" for admins, which runs the period due now once, as the
schedule would (a period that ran is not run again)."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in
from bot.console.note_rules import may_read
from bot.console.people import Person
from bot.console.rendering import Refused, not_found
from bot.jobs.runner import ALL
from memory import InvalidInput
from memory.types import Scope

_log = logging.getLogger(__name__)

# What the audit calls a job an admin ran from the console.
RUN_JOB = "console: run a job now"
# Runs started from the console, kept so that they finish (and are not collected).
_started: set[asyncio.Task[object]] = set()


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/jobs")(jobs_page)
    routes.post("/jobs/{name:[a-z]{1,40}}/run")(run_job)


def _shown(person: Person, scope: str) -> bool:
    """Whether a job's scope is one the person may read (every scope, for an admin)."""
    if person.admin or scope == ALL:
        return True
    try:
        return may_read(person, Scope.parse(scope))
    except InvalidInput:  # a conversation's key: its runs are an admin's to read
        return False


async def jobs_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    console = request.app[CONSOLE]
    runner, now = console.jobs, console.clock()
    schedules = []
    for job in runner.jobs.values():
        for scope, cron in job.schedules():
            if not _shown(person, scope):
                continue
            last = await runner.runs.fetch_last(job.name, None if scope == ALL else scope)
            next_run = runner.trigger(cron).get_next_fire_time(None, now)
            schedules.append((job.name, scope, cron, next_run, last))
    runs = [run for run in await runner.runs.fetch_recent(200) if _shown(person, run.scope)]
    return request.app[PAGES].render(
        request,
        "jobs.html",
        schedules=schedules,
        runs=runs[:50],
        enabled=console.settings.jobs.enabled,
        timezone=console.settings.jobs.timezone,
        started=request.query.get("started", ""),
    )


async def run_job(request: web.Request) -> web.StreamResponse:
    person = signed_in(request)
    if not person.admin:
        raise Refused(403, "Admins only", "Only an admin can run a job now.")
    console = request.app[CONSOLE]
    job = console.jobs.jobs.get(request.match_info["name"])
    if job is None:
        raise not_found()
    if not console.leading():
        raise Refused(
            409,
            "Not this replica",
            "Jobs run on the replica that leads, and this one does not now: try again, "
            "or open the console of the leading replica (lorebot doctor names it).",
        )
    schedules = job.schedules()
    _log.info("console: %s runs job %s now", person.user_id, job.name)
    actions = console.stores.actions  # who ran what, in the audit
    action = await actions.record(
        RUN_JOB,
        {"job": job.name, "scopes": [scope for scope, _ in schedules]},
        requester=person.user_id,
        channel_scope=None,
        conversation={},
        approval="admin",
    )
    await actions.start(action.id, decided_by=person.user_id)

    async def run() -> None:
        # As the schedule fires: the period due now, once (a period that ran is not run
        # again, whoever asked for it).
        outcomes = []
        try:
            for scope, cron in schedules:
                outcomes += await console.jobs.fire(job, scope, cron)
            failed = [r for r in outcomes if r.status == "failed"]
            summary = ", ".join(f"{r.scope} {r.period} {r.status}" for r in outcomes)
            await actions.finish(action.id, "error" if failed else "ok", summary, 0)
        except Exception as exc:
            _log.exception("job %s, run from the console, failed", job.name)
            await actions.finish(action.id, "error", type(exc).__name__, 0)

    task: asyncio.Task[object] = asyncio.create_task(run(), name=f"job {job.name} from console")
    _started.add(task)
    task.add_done_callback(_started.discard)
    raise web.HTTPSeeOther(request.app[PAGES].url(f"/jobs?started={job.name}"))
