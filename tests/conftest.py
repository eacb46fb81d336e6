"""Shared fixtures: no network beyond 127.0.0.1, a controllable clock, a temporary store."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory import Database, NoteStore
from tests.fakes.ollama import fake_ollama  # noqa: F401  (fixture)


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


class FakeClock:
    """A clock tests move by hand, so nothing sleeps for real."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


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
    monkeypatch.setattr("bot.config_paths.SYSTEM_CONFIG", tmp_path / "etc-lorebot" / "config.toml")
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(tmp_path / "cli.db"))
    monkeypatch.setenv("LOREBOT_SKILLS__HOME_ROOT", str(tmp_path / "home-skills"))
    monkeypatch.setenv("LOREBOT_SKILLS__USER_ROOT", str(tmp_path / "user-skills"))
    yield tmp_path
