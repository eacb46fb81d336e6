"""The overview: each platform's connection, the model, the replicas and their heartbeats,
and how many cards wait."""

from __future__ import annotations

import time
from datetime import timedelta

from aiohttp import web

from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/")(overview_page)


async def overview_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    console = request.app[CONSOLE]
    now = console.clock()
    replicas = await console.stores.replicas.fetch_all()
    slips = await console.stores.slips.fetch_counts_since(now - timedelta(days=1))
    runner, schedules = console.jobs, []
    for job in runner.jobs.values():
        last = await runner.runs.fetch_last(job.name)
        schedules.append((job.name, runner.next_run(job, now), last))
    waiting = await console.stores.proposals.fetch_for(
        None if person.admin else person.user_id, waiting=True, limit=1000
    )
    return request.app[PAGES].render(
        request,
        "overview.html",
        platforms=[
            (
                name,
                "another replica" if name in console.elsewhere else adapter.connected,
                _ago(console.dispatcher.last_event_at.get(name)),
            )
            for name, adapter in console.adapters.items()
        ],
        slips=sum(slips.values()),
        jobs=schedules,
        jobs_enabled=console.settings.jobs.enabled,
        model=await console.model.fetch_health(),
        backend=console.settings.model.backend,
        replicas=[(r, r.lost(now)) for r in replicas],
        waiting=len(waiting),
    )


def _ago(moment: float | None) -> str:
    """How long ago a moment of `time.monotonic()` was, in words."""
    if moment is None:
        return "no event since lorebot started"
    seconds = round(time.monotonic() - moment)
    if seconds < 120:
        return f"last event {seconds} s ago"
    if seconds < 7200:
        return f"last event {seconds // 60} min ago"
    return f"last event {seconds // 3600} h ago"
