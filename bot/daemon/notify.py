"""The systemd notify protocol: READY, STOPPING, STATUS, WATCHDOG and EXTEND_TIMEOUT_USEC
datagrams.

Without `NOTIFY_SOCKET` (not under systemd) every call does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator

_log = logging.getLogger(__name__)

# Each request for more start-up time asks for this much, and is repeated three times
# within it; after `START_EXTENSION_LIMIT_S` in all, a start that still has not finished
# is left to systemd's own timeout, as a hung one should be.
START_EXTENSION_S = 60.0
START_EXTENSION_LIMIT_S = 3600.0


class Notifier:
    """Sends `KEY=value` datagrams to the socket systemd gave us."""

    def __init__(self, socket_path: str | None) -> None:
        self.address = socket_path
        if socket_path and socket_path.startswith("@"):
            self.address = "\0" + socket_path[1:]  # an abstract socket
        self._socket: socket.socket | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> None:
        if not self.address:
            return
        if self._socket is None:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            self._socket.sendto("\n".join(fields).encode(), self.address)
        except OSError as exc:
            _log.warning("could not notify systemd (%s): %s", self.address, exc)

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=shutting down")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def extend_start(self, seconds: float, status: str) -> None:
        """Ask for `seconds` more to finish starting (systemd 236 and later), saying why."""
        self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}", f"STATUS={status}")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


@contextlib.asynccontextmanager
async def start_extended(
    notifier: Notifier, status: str, every_s: float = START_EXTENSION_S / 3
) -> AsyncIterator[None]:
    """While the block runs, keep asking systemd for more time to start: opening the
    database migrates it, which can outlast the start timeout on a large one."""
    if not notifier.enabled:
        yield
        return

    async def keep_asking() -> None:
        until = time.monotonic() + START_EXTENSION_LIMIT_S
        while time.monotonic() < until:
            notifier.extend_start(START_EXTENSION_S, status)
            await asyncio.sleep(every_s)

    asking = asyncio.create_task(keep_asking(), name="systemd-start-extension")
    try:
        yield
    finally:
        asking.cancel()
        await asyncio.wait({asking})
