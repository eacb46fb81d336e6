"""The settings page, for admins: the effective configuration, where each value came from
(default, the TOML file, the environment, .env), secrets masked. Read-only: lorebot's
settings are changed where they are kept, and it is restarted."""

from __future__ import annotations

import json

from aiohttp import web

from bot.config.loading import read_inputs
from bot.config.render import shown_settings
from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in
from bot.console.rendering import not_found


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/settings")(settings_page)


async def settings_page(request: web.Request) -> web.Response:
    if not signed_in(request).admin:
        raise not_found()
    settings = request.app[CONSOLE].settings
    inputs = read_inputs(settings.config)
    rows = []
    for key, value in shown_settings(settings).items():
        source = inputs.source_of(key.split("."))
        origin: str = source.origin
        if source.variable and origin in ("environment", ".env"):
            origin = f"{origin}: {source.variable}"
        text = "(not set)" if value is None else json.dumps(value, ensure_ascii=False)
        rows.append((key, text, origin))
    return request.app[PAGES].render(
        request, "settings.html", rows=rows, config_file=inputs.config_file
    )
