"""The overview: each platform's connection, the model, the replicas and their heartbeats,
and how many cards wait."""

from __future__ import annotations

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
    waiting = await console.stores.proposals.fetch_for(
        None if person.admin else person.user_id, waiting=True, limit=1000
    )
    return request.app[PAGES].render(
        request,
        "overview.html",
        platforms=[(name, adapter.connected) for name, adapter in console.adapters.items()],
        model=await console.model.fetch_health(),
        backend=console.settings.model.backend,
        replicas=[(r, r.lost(now)) for r in replicas],
        waiting=len(waiting),
    )
