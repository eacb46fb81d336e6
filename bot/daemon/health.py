"""`/healthz` and `/metrics` on a local HTTP port (127.0.0.1 unless configured otherwise)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

HealthReport = Callable[[], Awaitable[tuple[bool, dict[str, Any]]]]


class HealthServer:
    """A small aiohttp app; `report` says whether the bot is healthy and why."""

    def __init__(self, listen: str, report: HealthReport) -> None:
        host, _, port = listen.rpartition(":")
        self.host = host or "127.0.0.1"
        self.port = int(port)
        self.report = report
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0 and site._server is not None:  # the port the OS chose, for tests
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def _healthz(self, request: web.Request) -> web.Response:
        healthy, details = await self.report()
        body = json.dumps({"status": "ok" if healthy else "unhealthy", **details}, default=str)
        return web.Response(
            text=body, status=200 if healthy else 503, content_type="application/json"
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
