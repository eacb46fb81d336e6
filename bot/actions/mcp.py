"""The operator's MCP servers, connected with the official `mcp` SDK.

Each server runs in one task of its own (the SDK's client must be entered and left in the
same task): it connects, lists the tools, keeps the session alive, and when the server
fails to start or dies it reconnects with backoff. Meanwhile its tools answer "server X is
unavailable". Calls come from other tasks and have a timeout; a timeout or a lost
connection is "outcome unknown", never a failure or a success.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bot.actions.held import HeldArguments
from bot.actions.mcp_values import (
    CallResult,
    RemoteTool,
    ServerUnavailable,
    hints_of,
    ms_since,
    result_of,
)
from bot.approvals.card_text import valid_tool_name
from bot.backoff import Backoff
from bot.config.sections import McpServerSettings, McpSettings
from bot.tasks import stop_if_asked
from memory.policy.redaction import redact

_log = logging.getLogger(__name__)

# The SDK's code for a request that timed out; the call may still complete on the server.
REQUEST_TIMEOUT = -32001
KEEPALIVE_S = 2.0
ASK_EVERY = 10  # keep-alive rounds between real requests (the others read the SDK's cache)
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
REFUSED_NAME = (
    "MCP server %s lists a tool named %r, which is not offered: a tool name is letters, "
    "digits, _, . and -, at most 64"
)
# A session whose streams closed under a call.
_STREAM_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class McpServer:
    """One configured server and its connection."""

    def __init__(
        self,
        settings: McpServerSettings,
        *,
        connect_timeout_s: float,
        target: Any = None,
        on_tools: Callable[[McpServer], None] = lambda server: None,
        keepalive_s: float = KEEPALIVE_S,
    ) -> None:
        self.keepalive_s = keepalive_s
        self.connections = 0  # sessions opened so far
        self.settings = settings
        self.name = settings.name
        self.connect_timeout_s = connect_timeout_s
        self._target = target  # an in-process server, for tests; else from the settings
        self._on_tools = on_tools
        self.tools: tuple[RemoteTool, ...] = ()
        # Tools listed under a name a card could not show plainly: never offered.
        self.refused: tuple[str, ...] = ()
        # Arguments that hold a secret, by call hash, until their card is decided: kept in
        # memory only, never in the database.
        self.held = HeldArguments()
        self.status = "connecting"
        self.reason = ""
        self._client: Client | None = None
        self._lost = asyncio.Event()
        self._connected = asyncio.Event()
        self._first_try = asyncio.Event()  # set once the first connection attempt ended
        self._stopped: anyio.CancelScope | None = None  # while `run()` runs
        self._ended = asyncio.Event()
        self._errlog: TextIO | None = None

    def _lose(self) -> None:
        """The session is gone (or going): no call may use it, and waiters wait again."""
        self._client = None
        self._connected.clear()
        self._lost.set()

    @property
    def connected(self) -> bool:
        return self._client is not None

    @property
    def identity(self) -> str:
        """What this server is, beyond its name: its command, arguments and folder, or its
        URL. Allowances and cards are bound to it, so pointing a name at another program
        invalidates them."""
        return self.settings.identity()

    def tool(self, name: str) -> RemoteTool | None:
        """The tool `name` as the server lists it now (its current annotations)."""
        return next((tool for tool in self.tools if tool.name == name), None)

    async def fetch_tools(self) -> None:
        """Bring the tool list up to date before a call is decided: the SDK keeps the last
        listing until the server says it changed, so this asks the server only then. A
        failure keeps the list as it was (the call itself will say what is wrong)."""
        client = self._client
        if client is None:
            return
        try:
            with anyio.fail_after(self.connect_timeout_s):
                await self._list_tools(client)
        except Exception as exc:  # noqa: BLE001 - the SDK raises exception groups
            _log.info("MCP server %s: the tool list could not be read: %s", self.name, exc)

    async def wait_first_try(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until the first connection attempt has ended, so a
        turn right after a start sees the server's tools or knows it is unavailable."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._first_try.wait()

    async def wait_connected(self, timeout_s: float) -> bool:
        """Wait until connected (or the timeout); whether it is."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._connected.wait()
        except TimeoutError:
            pass
        return self.connected

    def _transport(self) -> Any:
        if self._target is not None:
            return self._target
        settings = self.settings
        if settings.url is not None:
            client = httpx2.AsyncClient(headers=settings.resolved_headers())
            return streamable_http_client(settings.url, http_client=client)
        assert settings.command is not None
        params = StdioServerParameters(
            command=settings.command,
            args=list(settings.args),
            env=settings.resolved_env(),
            cwd=settings.cwd,
        )
        if self._errlog is None:
            # The server's stderr, kept to explain a failed start (read back redacted).
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        transport: AbstractAsyncContextManager[Any] = stdio_client(params, errlog=self._errlog)
        return transport

    async def run(self) -> None:
        """Connect and stay connected until `stop()` (or cancelled), reconnecting with
        backoff. Time limits and the stop are anyio cancel scopes: the SDK's shielded
        shutdown then runs to the end and kills a server that hangs, where a native
        `Task.cancel()` could leave the process running and the shutdown waiting on it."""
        self._stopped = anyio.CancelScope()
        self._ended.clear()
        try:
            with self._stopped:
                await self._run()
        finally:
            self._stopped = None
            self._ended.set()
            self._close_errlog()

    def _close_errlog(self) -> None:
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    async def _run(self) -> None:
        backoff = Backoff(BACKOFF_FIRST_S, BACKOFF_MAX_S)
        while True:
            try:
                await self._session()
                backoff.reset()  # it was connected: the next failure starts over
                delay = backoff.next_delay()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - the SDK raises exception groups
                stop_if_asked()  # a stop the SDK wrapped in a group still ends the loop
                self.reason = self._describe(exc)
                delay = backoff.next_delay()
                _log.warning("MCP server %s: %s; retrying in %.0f s", self.name, self.reason, delay)
            finally:
                self._first_try.set()
            self._client = None
            self._connected.clear()
            self.status = "down"
            await asyncio.sleep(delay)

    async def stop(self) -> None:
        """End `run()` and wait for it: the session closes and the server's process is
        stopped (the SDK allows it a few seconds, then kills its process tree)."""
        if self._stopped is not None:
            self._stopped.cancel()
            await self._ended.wait()

    async def _session(self) -> None:
        self.status = "connecting"
        with anyio.fail_after(self.connect_timeout_s) as deadline:
            async with Client(self._transport()) as client:
                await self._list_tools(client)
                deadline.deadline = math.inf  # connected: the session may last
                self._client, self.status, self.reason = client, "connected", ""
                self.connections += 1
                self._lost.clear()
                self._connected.set()
                self._first_try.set()
                _log.info("MCP server %s connected: %d tools", self.name, len(self.tools))
                try:
                    await self._keep_alive(client)
                finally:
                    self._lose()
        self.reason = "the connection was lost"

    async def probe(self) -> str | None:
        """Connect once and list the tools, for `lorebot doctor`; None when it worked, else
        why it did not."""
        try:
            with anyio.fail_after(self.connect_timeout_s):
                async with Client(self._transport()) as client:
                    await self._list_tools(client)
        except Exception as exc:  # noqa: BLE001 - the SDK raises exception groups
            return self._describe(exc)
        finally:
            self._close_errlog()
        return None

    async def _keep_alive(self, client: Client) -> None:
        """Notice a changed tool list (the SDK drops its cached list when the server says it
        changed) and a dead server (a fresh listing every few rounds)."""
        rounds = 0
        while not self._lost.is_set():
            try:
                await asyncio.wait_for(self._lost.wait(), self.keepalive_s)
                return
            except TimeoutError:
                pass
            rounds += 1
            with anyio.fail_after(self.connect_timeout_s):
                # Ping is gone from the protocol's newer revisions: a listing that skips
                # the cache is the request that proves the server still answers.
                await self._list_tools(client, fresh=rounds % ASK_EVERY == 0)

    async def _list_tools(self, client: Client, *, fresh: bool = False) -> None:
        listed = await client.list_tools(cache_mode="refresh" if fresh else "use")
        refused = tuple(t.name for t in listed.tools if not valid_tool_name(t.name))
        if refused != self.refused:
            self.refused = refused
            for name in refused:
                _log.warning(REFUSED_NAME, self.name, name[:80])
        tools = tuple(
            RemoteTool(self.name, t.name, t.description or "", dict(t.input_schema), hints_of(t))
            for t in listed.tools
            if t.name not in refused
        )
        if tools != self.tools:
            self.tools = tools
            self._on_tools(self)

    def _describe(self, exc: BaseException) -> str:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, TimeoutError):
            text = f"no answer within {self.connect_timeout_s:g} s"
        else:
            text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
        if self._errlog is not None:
            self._errlog.seek(0)
            tail = self._errlog.read()[-300:].strip().splitlines()
            if tail:
                text += f" (its last words: {tail[-1]})"
        return redact(text)

    async def call(self, tool: str, arguments: Mapping[str, Any], timeout_s: float) -> CallResult:
        """Call one tool once; `ServerUnavailable` when not connected."""
        client = self._client
        if client is None:
            raise ServerUnavailable(f"server {self.name} is unavailable: {self.reason}")
        started = time.monotonic()
        try:
            result = await client.call_tool(tool, dict(arguments), read_timeout_seconds=timeout_s)
        except MCPError as exc:
            took = ms_since(started)
            if exc.error.code == REQUEST_TIMEOUT:
                return CallResult("unknown", f"no answer within {timeout_s:g} s", took)
            self._lose()  # the connection closed: reconnect
            return CallResult("unknown", f"the connection was lost: {exc}", took)
        except (OSError, httpx2.HTTPError, *_STREAM_ERRORS) as exc:
            self._lose()
            return CallResult("unknown", f"the connection was lost: {exc}", ms_since(started))
        except Exception as exc:  # noqa: BLE001 - sent, then the SDK refused what came back
            # For example a result that breaks the tool's own output schema: the tool ran,
            # but what it did is not known.
            _log.warning("MCP server %s: the result of %s was refused: %s", self.name, tool, exc)
            why = redact(f"{type(exc).__name__}: {exc}")
            return CallResult("unknown", f"its result could not be read ({why})", ms_since(started))
        return result_of(result, ms_since(started))


class McpServers:
    """Every configured server, started with the daemon."""

    def __init__(
        self,
        settings: McpSettings,
        *,
        targets: Mapping[str, Any] | None = None,
        on_tools: Callable[[McpServer], None] = lambda server: None,
    ) -> None:
        targets = targets or {}
        self.settings = settings
        self.servers = {
            s.name: McpServer(
                s,
                connect_timeout_s=settings.connect_timeout_s,
                target=targets.get(s.name),
                on_tools=on_tools,
            )
            for s in settings.servers
        }

    def get(self, name: str) -> McpServer | None:
        return self.servers.get(name)

    async def wait_first_tries(self) -> None:
        """Wait until every server has tried to connect once (each try is bounded by
        `connect_timeout_s`): a turn right after a start then sees their tools."""
        timeout = self.settings.connect_timeout_s
        await asyncio.gather(*(s.wait_first_try(timeout) for s in self.servers.values()))

    def unavailable(self) -> list[McpServer]:
        """Servers that are not connected now."""
        return [server for server in self.servers.values() if not server.connected]

    async def stop(self) -> None:
        await asyncio.gather(*(server.stop() for server in self.servers.values()))
