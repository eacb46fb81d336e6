"""The skills page: the catalog as the model sees it, which skill shadows which, and the
SKILL.md files that failed validation, and why."""

from __future__ import annotations

from aiohttp import web

from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/skills")(skills_page)


async def skills_page(request: web.Request) -> web.Response:
    signed_in(request)
    catalog = request.app[CONSOLE].catalog
    catalog.refresh()
    return request.app[PAGES].render(
        request, "skills.html", skills=catalog.all(), skipped=catalog.skipped
    )
