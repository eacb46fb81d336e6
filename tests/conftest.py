"""Shared fixtures: no network beyond 127.0.0.1, no database connection left open, a
controllable clock, a temporary store."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import sys
import sysconfig
import time
import traceback
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from memory import Database, NoteStore
from tests.fakes.ollama import fake_ollama  # noqa: F401  (fixture)
from tests.support.clock import FakeClock


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk to fakes on 127.0.0.1 only; anything else is a test bug."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(real: Any) -> Any:
        def connect(self: socket.socket, address: Any) -> Any:
            if not _is_loopback(address):
                raise ConnectionRefusedError(f"test tried to reach the network: {address!r}")
            return real(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))


ROOT = Path(__file__).resolve().parents[1]
# How long the worker thread of a closed connection may take to end after `close()`.
CLOSING_GRACE_S = 1.0

Opened = tuple[aiosqlite.Connection, traceback.StackSummary]
# The aiosqlite connections opened during the running test, and where each was opened.
_opened: list[Opened] = []
_real_await = aiosqlite.Connection.__await__
_failed = pytest.StashKey[bool]()
_LIBRARIES = ("<", *{f"{sysconfig.get_path(p)}/" for p in ("stdlib", "purelib", "scripts")})


def _recording_await(conn: aiosqlite.Connection) -> Generator[Any, None, aiosqlite.Connection]:
    """`await conn` (and `async with conn`) starts the worker thread: note where it was
    called from; source lines are read only when the place is shown."""
    opening = _real_await(conn)  # starts the thread
    stack = traceback.walk_stack(sys._getframe(1))
    _opened.append((conn, traceback.StackSummary.extract(stack, lookup_lines=False)))
    return opening


def still_open() -> list[Opened]:
    """The connections opened during this test whose worker thread (aiosqlite 0.22:
    `Connection._thread`) is still alive; one that is closing gets a moment to end."""
    deadline = time.monotonic() + CLOSING_GRACE_S
    for conn, _ in _opened:
        conn._thread.join(max(0.0, deadline - time.monotonic()))
    return [(conn, where) for conn, where in _opened if conn._thread.is_alive()]


def _where(stack: traceback.StackSummary) -> str:
    """The frames of `stack` outside Python's and the installed packages' own code (those
    of lorebot and its tests), outermost first."""
    lines = []
    for frame in reversed(stack):
        if frame.filename.startswith(_LIBRARIES):
            continue
        path = Path(frame.filename)
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        lines.append(f"    {shown}:{frame.lineno} in {frame.name}\n")
    return "".join(lines)


def describe(left: list[Opened]) -> str:
    """What `still_open` found, and where each connection was opened."""
    places = "".join(
        f"  connection {n}, opened at:\n{_where(where)}" for n, (_, where) in enumerate(left, 1)
    )
    return (
        f"{len(left)} database connection(s) opened during this test are still open: close "
        f"them (each keeps a thread that stops the process from exiting)\n{places}"
    )


def _stop(left: list[Opened]) -> None:
    """End the worker threads of connections a test left open, so the run still exits."""

    async def stop(conn: aiosqlite.Connection) -> None:
        stopped = conn.stop()  # closes the sqlite3 connection, then ends the thread
        if stopped is not None:
            await stopped

    loop = asyncio.new_event_loop()
    try:
        for conn, _ in left:
            with suppress(Exception):
                loop.run_until_complete(asyncio.wait_for(stop(conn), 5))
    finally:
        loop.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Note whether the test failed (in setup or in its call) for `_no_open_connections`."""
    report = yield
    if report.failed:
        item.stash[_failed] = True
    return report


@pytest.fixture(autouse=True)
def _no_open_connections(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A test and its fixtures close every database connection they open: an open one
    keeps a worker thread that stops the process from exiting. After each test what it
    left open is closed, and a test that passed fails, naming where each was opened."""
    monkeypatch.setattr(aiosqlite.Connection, "__await__", _recording_await)
    _opened.clear()
    yield
    left = still_open()
    _opened.clear()
    if not left:
        return
    _stop(left)
    if request.node.stash.get(_failed, False):
        return  # its own failure is the news; what it left open follows from that
    pytest.fail(describe(left), pytrace=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "lorebot.db"


@pytest.fixture
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[NoteStore]:
    db = await Database.open(db_path)
    try:
        yield NoteStore(db, clock=clock)
    finally:
        await db.close()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A clean LOREBOT_ environment with the database in a temporary folder."""
    import os

    for key in list(os.environ):
        if key.startswith("LOREBOT_") or key == "STATE_DIRECTORY":
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    # No config file of the machine's user or of the machine itself is read.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setattr("bot.config.paths.SYSTEM_CONFIG", tmp_path / "etc-lorebot" / "config.toml")
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(tmp_path / "cli.db"))
    monkeypatch.setenv("LOREBOT_SKILLS__HOME_ROOT", str(tmp_path / "home-skills"))
    monkeypatch.setenv("LOREBOT_SKILLS__USER_ROOT", str(tmp_path / "user-skills"))
    yield tmp_path
