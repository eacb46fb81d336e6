"""The console's web server: one aiohttp app on `console.listen`, under the base path of
`console.base_url`, served by every replica alike (sessions and links are in the database).
"""

from __future__ import annotations

import logging
from pathlib import Path

from aiohttp import web

from bot.console import (
    audit_page,
    card_pages,
    jobs_page,
    memory_pages,
    oauth,
    overview_page,
    settings_page,
    signin,
    skills_page,
)
from bot.console.browser import Cookies
from bot.console.context import CONSOLE, COOKIES, PAGES, Console
from bot.console.guard import Guard
from bot.console.rendering import Pages, base_path, not_found

_log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"


def console_app(console: Console) -> web.Application:
    """The console as an aiohttp application, its routes under the base path."""
    prefix = base_path(console.settings.console.public_url)
    pages = Pages(prefix)
    cookies = Cookies(console.settings.console.public_url, prefix)
    guard = Guard(pages, console.stores.console, console.admins, cookies)
    app = web.Application(middlewares=guard.middlewares, client_max_size=256 * 1024)
    app[CONSOLE] = console
    app[PAGES] = pages
    app[COOKIES] = cookies
    routes = web.RouteTableDef()
    pages_of = (overview_page, signin, memory_pages, card_pages, audit_page, jobs_page)
    for module in (*pages_of, skills_page, settings_page, oauth):
        module.add_routes(routes)
    app.router.add_routes(prefixed(routes, prefix))
    app.router.add_get(f"{prefix}/static/{{name}}", static_file)
    return app


# The stylesheet, HTMX and its licence: served by name, nothing else of the folder.
STATIC_FILES = frozenset(path.name for path in STATIC.iterdir() if path.is_file())


async def static_file(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if name not in STATIC_FILES:
        raise not_found()
    return web.FileResponse(STATIC / name)


def prefixed(routes: web.RouteTableDef, prefix: str) -> list[web.RouteDef]:
    found = []
    for route in routes:
        assert isinstance(route, web.RouteDef)
        found.append(web.RouteDef(route.method, prefix + route.path, route.handler, route.kwargs))
    return found


class ConsoleServer:
    """The console on its own port, started and closed with the daemon."""

    def __init__(self, console: Console) -> None:
        self.console = console
        settings = console.settings.console
        self.host, self.port = settings.host, settings.port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(console_app(self.console), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0 and site._server is not None:  # the port the OS chose, for tests
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        _log.info("console on http://%s:%d/", self.host, self.port)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
