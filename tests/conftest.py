"""Shared fixtures: no network beyond 127.0.0.1, no database connection left open, a
controllable clock, a temporary store."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore
from tests.fakes.ollama import fake_ollama  # noqa: F401  (fixture)
from tests.support.browser import chromium  # noqa: F401  (fixture)
from tests.support.clock import FakeClock
from tests.support.connections import describe, opened, recording_await, still_open, stop_left
from tests.support.engines import (  # noqa: F401  (fixtures)
    cli_database,
    database_at,
    engine,
    engine_stores,
    open_again,
)
from tests.support.harness import on_each_engine  # noqa: F401  (fixture)
from tests.support.llama import llama_chat, llama_embed  # noqa: F401  (fixtures)
from tests.support.postgres import pg_url, postgres_server  # noqa: F401  (fixtures)

# The openai package's own variables, which lorebot honours as defaults.
OPENAI_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY")


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


REAL_MODEL_FIXTURES = {"llama_chat", "llama_embed"}


def _runs_the_real_model(item: pytest.Item) -> bool:
    if REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return hasattr(module, "LlamaServer")  # the module starts servers of its own


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that run the real model, so that `pytest -m "not real_model"` runs
    the quick part of the suite without them."""
    for item in items:
        if _runs_the_real_model(item):
            item.add_marker(pytest.mark.real_model)


_failed = pytest.StashKey[bool]()


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
    monkeypatch.setattr(aiosqlite.Connection, "__await__", recording_await)
    opened.clear()
    yield
    left = still_open()
    opened.clear()
    if not left:
        return
    stop_left(left)
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
async def store(db_path: Path, clock: FakeClock) -> AsyncIterator[SqliteNoteStore]:
    db = await SqliteDatabase.open(db_path)
    try:
        yield SqliteNoteStore(db, clock=clock)
    finally:
        await db.close()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A clean LOREBOT_ environment with the database in a temporary folder."""
    import os

    for key in list(os.environ):
        if key.startswith("LOREBOT_") or key in ("STATE_DIRECTORY", *OPENAI_VARIABLES):
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
