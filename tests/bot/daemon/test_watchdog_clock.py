"""The systemd watchdog on a clock the test controls: how often it is fed, what it says
when it is not, and the loop lag `/healthz` reports."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from bot.config.settings import SystemdEnvironment
from bot.daemon.supervision import Supervisor
from bot.model.client import Model
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.harness import make_settings


class SteppedTime:
    """A monotonic clock and a sleep that advances it: each sleep of `seconds` takes
    `seconds + lag` on the clock, as on an event loop that answers `lag` late."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.lag = 0.0
        self.slept: list[float] = []
        self.rounds_wanted = 0
        self.enough = asyncio.Event()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds + self.lag
        if len(self.slept) > self.rounds_wanted:
            self.enough.set()
        await asyncio.sleep(0)


SupervisorFor = Callable[[RecordingAdapter, "SteppedTime"], Supervisor]


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.setblocking(False)
    yield sock
    sock.close()


def received(sock: socket.socket) -> list[str]:
    found = []
    while True:
        try:
            found.append(sock.recv(4096).decode())
        except BlockingIOError:
            return found


async def watch_rounds(supervisor: Supervisor, time: SteppedTime, rounds: int) -> None:
    """Let the watchdog loop run `rounds` times, then stop it."""
    time.rounds_wanted = rounds
    task = asyncio.create_task(supervisor.watch())
    await asyncio.wait_for(time.enough.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture
async def supervisors(tmp_path: Path, fake_ollama: FakeOllama) -> AsyncIterator[SupervisorFor]:
    made: list[Supervisor] = []

    def supervisor_for(adapter: RecordingAdapter, time: SteppedTime) -> Supervisor:
        adapter.connected = True
        settings = make_settings(tmp_path / "bot.db", fake_ollama.url, bot={"adapter_grace_s": 5})
        systemd = SystemdEnvironment(str(tmp_path / "notify.sock"), watchdog_usec=30_000_000)
        made.append(
            Supervisor(
                settings,
                systemd,
                {"test": adapter},
                Model(settings.ollama),
                monotonic=time.monotonic,
                sleep=time.sleep,
            )
        )
        return made[-1]

    yield supervisor_for
    for supervisor in made:
        supervisor.notifier.close()
        await supervisor.model.close()


async def test_the_watchdog_is_fed_three_times_per_period_while_all_is_well(
    supervisors: SupervisorFor, notify_socket: socket.socket
) -> None:
    time = SteppedTime()
    supervisor = supervisors(RecordingAdapter(), time)
    await watch_rounds(supervisor, time, 4)
    # WatchdogSec=30 s: fed every 10 s, well within the period systemd waits.
    assert time.slept[:3] == [10.0, 10.0, 10.0]
    assert received(notify_socket).count("WATCHDOG=1") >= 3


async def test_a_lagging_loop_starves_the_watchdog_and_says_so(
    supervisors: SupervisorFor,
    notify_socket: socket.socket,
    caplog: pytest.LogCaptureFixture,
) -> None:
    time = SteppedTime()
    time.lag = 12.34567
    supervisor = supervisors(RecordingAdapter(), time)
    with caplog.at_level(logging.WARNING, logger="bot.daemon.supervision"):
        await watch_rounds(supervisor, time, 3)
    assert "WATCHDOG=1" not in received(notify_socket)
    assert "watchdog not fed: the event loop lagged 12.3 s (more than 10.0 s)" in caplog.text
    _, details = await supervisor.report()
    assert details["loop_lag_s"] == 12.3457


async def test_a_short_lag_still_feeds_the_watchdog(
    supervisors: SupervisorFor, notify_socket: socket.socket
) -> None:
    time = SteppedTime()
    time.lag = 9.5  # late, but within the 10 s between feeds
    supervisor = supervisors(RecordingAdapter(), time)
    await watch_rounds(supervisor, time, 3)
    assert received(notify_socket).count("WATCHDOG=1") >= 2


async def test_a_deaf_adapter_starves_the_watchdog_and_is_named(
    supervisors: SupervisorFor,
    notify_socket: socket.socket,
    caplog: pytest.LogCaptureFixture,
) -> None:
    time = SteppedTime()
    adapter = RecordingAdapter()
    supervisor = supervisors(adapter, time)
    adapter.connected = False  # and the 5 s grace period passes in the first round
    with caplog.at_level(logging.WARNING, logger="bot.daemon.supervision"):
        await watch_rounds(supervisor, time, 3)
    sent = received(notify_socket)
    assert "WATCHDOG=1" not in sent
    assert "STATUS=not connected: test" in sent
    assert "watchdog not fed: test disconnected too long" in caplog.text
