"""A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL), for partitions: `stall` stops
forwarding in both directions without closing anything, as a network that drops every
packet would look to both ends; `drop` then closes the connections it held (as the server
does once its keepalives go unanswered) and lets new ones through."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class StallingProxy:
    target: tuple[str, int]
    url: str = ""
    _flowing: asyncio.Event = field(default_factory=asyncio.Event)
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)
    _pumps: set[asyncio.Task[None]] = field(default_factory=set)

    @classmethod
    @contextlib.asynccontextmanager
    async def to(cls, url: str) -> AsyncIterator[StallingProxy]:
        """A proxy to the server of `url`; its `url` is the same one through the proxy."""
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        proxy = cls((parts.hostname, parts.port))
        proxy._flowing.set()
        server = await asyncio.start_server(proxy._connect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        netloc = f"{parts.username}@127.0.0.1:{port}" if parts.username else f"127.0.0.1:{port}"
        proxy.url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        try:
            yield proxy
        finally:
            server.close()
            proxy.drop()
            await server.wait_closed()

    def stall(self) -> None:
        self._flowing.clear()

    def drop(self) -> None:
        """Close every connection held, and forward again for new ones."""
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()
        for pump in self._pumps:
            pump.cancel()
        self._flowing.set()

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers += [writer, up_writer]
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            pump = asyncio.create_task(self._pump(source, sink))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await source.read(65536):
                await self._flowing.wait()
                sink.write(data)
                await sink.drain()
        with contextlib.suppress(OSError):
            sink.close()
