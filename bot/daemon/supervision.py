"""Keeping an eye on the running bot: systemd readiness and watchdog, health and metrics,
and the web console beside them.

The watchdog is fed only while the event loop answers on time and every adapter has been
connected within its grace period, so a bot that is up but deaf gets restarted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.base import Adapter
from bot.config.settings import Settings, SystemdEnvironment
from bot.console.site import ConsoleServer
from bot.daemon.health import HealthServer
from bot.daemon.notify import Notifier
from bot.model.client import Model

_log = logging.getLogger(__name__)


class Supervisor:
    """Adapter liveness, systemd notifications and the health endpoint."""

    def __init__(
        self,
        settings: Settings,
        systemd: SystemdEnvironment,
        adapters: Mapping[str, Adapter],
        model: Model,
        *,
        console: ConsoleServer | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.adapters = adapters
        self.model = model
        self.console = console  # the web console, when it is on
        self.notifier = Notifier(systemd.notify_socket)
        self.watchdog_s = systemd.watchdog_usec / 1e6 if systemd.watchdog_usec else None
        self.monotonic = monotonic
        self.sleep = sleep
        self._last_connected = {name: monotonic() for name in adapters}
        # Adapters another replica holds now (the leader's): not this one's to connect.
        self.elsewhere: set[str] = set()
        self.loop_lag = 0.0
        self.health: HealthServer | None = None

    def release(self, name: str) -> None:
        """Adapter `name` is connected by another replica now, not this one."""
        self.elsewhere.add(name)

    def hold(self, name: str) -> None:
        """This replica connects adapter `name` from now on: its grace period starts."""
        self.elsewhere.discard(name)
        self._last_connected[name] = self.monotonic()

    def deaf_adapters(self) -> list[str]:
        """Adapters this replica holds, disconnected for longer than their grace period."""
        now, grace = self.monotonic(), self.settings.bot.adapter_grace_s
        deaf = []
        for name, adapter in self.adapters.items():
            if name in self.elsewhere:
                continue
            if adapter.connected:
                self._last_connected[name] = now
            elif now - self._last_connected[name] > grace:
                deaf.append(name)
        return deaf

    async def report(self) -> tuple[bool, dict[str, Any]]:
        """Healthy while every adapter is connected; the model is reported reachable only
        when its latest probe or call was answered. Without the model lorebot still answers
        from memory, so an unreachable model alone does not make it unhealthy."""
        deaf = self.deaf_adapters()
        details = {
            "adapters": {
                name: "another replica" if name in self.elsewhere else a.connected
                for name, a in self.adapters.items()
            },
            "model": await self.model.fetch_health(),
            "loop_lag_s": round(self.loop_lag, 4),
        }
        return not deaf, details

    async def start(self) -> None:
        listen = self.settings.observability.listen
        if listen:
            self.health = HealthServer(listen, self.report)
            await self.health.start()
            _log.info("health and metrics on http://%s:%d/", self.health.host, self.health.port)
        if self.console is not None:
            await self.console.start()
        names = ", ".join(self.adapters) or "no adapters"
        self.notifier.ready(f"running with {names}")

    async def watch(self) -> None:
        """Feed the systemd watchdog while the bot is healthy; runs until cancelled."""
        if self.watchdog_s is None:
            return
        interval = self.watchdog_s / 3
        while True:
            started = self.monotonic()
            await self.sleep(interval)
            self.loop_lag = max(0.0, self.monotonic() - started - interval)
            deaf = self.deaf_adapters()
            if deaf:
                self.notifier.status(f"not connected: {', '.join(deaf)}")
                _log.warning("watchdog not fed: %s disconnected too long", ", ".join(deaf))
            elif self.loop_lag < interval:
                self.notifier.watchdog()
            else:  # systemd restarts a loop that stays this slow: say why beforehand
                _log.warning(
                    "watchdog not fed: the event loop lagged %.1f s (more than %.1f s)",
                    self.loop_lag,
                    interval,
                )

    async def stop(self) -> None:
        self.notifier.stopping()
        if self.console is not None:
            await self.console.close()
        if self.health is not None:
            await self.health.close()
        self.notifier.close()
