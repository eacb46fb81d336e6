"""The systemd notify protocol: READY, STOPPING, STATUS and WATCHDOG datagrams.

Without `NOTIFY_SOCKET` (not under systemd) every call does nothing.
"""

from __future__ import annotations

import logging
import socket

_log = logging.getLogger(__name__)


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

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
