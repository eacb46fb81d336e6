"""`/healthz`, `/metrics` and systemd readiness as a probe, Prometheus or systemd meets
them: an unhealthy bot and the grace before it, the whole report, the address actually
bound, the content type, no access-log line per probe, and a bot without adapters."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from bot.config.settings import SystemdEnvironment
from bot.daemon.app import Bot
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import make_settings

StartBot = Callable[..., AbstractAsyncContextManager[Bot]]


@pytest.fixture
def running_bot(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> StartBot:
    """Start a bot with the given observability address and settings, stop it after."""

    @asynccontextmanager
    async def start(
        listen: str, adapter: RecordingAdapter | None = None, **sections: dict[str, object]
    ) -> AsyncIterator[Bot]:
        settings = make_settings(
            tmp_path / "bot.db", fake_ollama.url, observability={"listen": listen}, **sections
        )
        bot = Bot(settings, [adapter or RecordingAdapter()], clock=clock)
        await bot.start()
        try:
            yield bot
        finally:
            await bot.stop()

    return start


def port_of(bot: Bot) -> int:
    assert bot.supervisor.health is not None
    return bot.supervisor.health.port


async def test_healthz_answers_503_unhealthy_while_an_adapter_is_down(
    running_bot: StartBot,
) -> None:
    adapter = RecordingAdapter()
    async with running_bot("127.0.0.1:0", adapter, bot={"adapter_grace_s": 1e-6}) as bot:
        url = f"http://127.0.0.1:{port_of(bot)}/healthz"
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                assert response.status == 200
                assert (await response.json())["status"] == "ok"
            adapter.connected = False  # the platform connection dropped past its grace
            async with session.get(url) as response:
                assert response.status == 503
                assert response.content_type == "application/json"
                report = await response.json()
    assert report["status"] == "unhealthy" and report["adapters"] == {"test": False}


async def test_healthz_reports_adapters_model_and_loop_lag(
    running_bot: StartBot,
) -> None:
    async with running_bot("127.0.0.1:0") as bot:
        url = f"http://127.0.0.1:{port_of(bot)}/healthz"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            report = await response.json()
    model = report.pop("model")
    assert report == {"status": "ok", "adapters": {"test": True}, "loop_lag_s": 0.0}
    assert (model["name"], model["reachable"]) == ("qwen3:8b", True)
    assert model["host"].startswith("http://127.0.0.1:") and model["checked_s_ago"] >= 0


async def test_an_adapter_down_within_its_grace_period_is_still_healthy(
    running_bot: StartBot,
) -> None:
    """A reconnect takes a moment; only a connection down past `adapter_grace_s` counts."""
    adapter = RecordingAdapter()
    async with running_bot("127.0.0.1:0", adapter, bot={"adapter_grace_s": 3600}) as bot:
        adapter.connected = False
        url = f"http://127.0.0.1:{port_of(bot)}/healthz"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
            assert (await response.json())["adapters"] == {"test": False}


class OtherPlatform(RecordingAdapter):
    platform = "other"


@pytest.mark.parametrize(
    ("adapters", "status"),
    [
        ([], "running with no adapters"),
        ([RecordingAdapter(), OtherPlatform()], "running with test, other"),
    ],
)
async def test_readiness_names_the_adapters_to_systemd(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    adapters: list[RecordingAdapter],
    status: str,
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(tmp_path / "notify.sock"))
        settings = make_settings(tmp_path / "bot.db", fake_ollama.url)
        systemd = SystemdEnvironment(str(tmp_path / "notify.sock"), watchdog_usec=None)
        bot = Bot(settings, adapters, clock=clock, systemd=systemd)
        await bot.start()
        await bot.stop()
        starting = notify.recv(4096).decode()  # asks for time while the database opens
        assert starting.startswith("EXTEND_TIMEOUT_USEC=")
        assert notify.recv(4096).decode() == f"READY=1\nSTATUS={status}"


async def test_metrics_are_served_as_prometheus_text(
    running_bot: StartBot,
) -> None:
    async with running_bot("127.0.0.1:0") as bot:
        url = f"http://127.0.0.1:{port_of(bot)}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=")


async def test_a_listen_address_without_host_binds_loopback_only(
    running_bot: StartBot, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.daemon.supervision")
    async with running_bot(":0") as bot:
        port = port_of(bot)
        url = f"http://127.0.0.1:{port}/healthz"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
    assert f"health and metrics on http://127.0.0.1:{port}/" in caplog.messages


async def test_the_configured_address_is_the_only_one_served(
    running_bot: StartBot,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with running_bot(f"127.0.0.1:{port}") as bot:
        assert port_of(bot) == port
        url = f"http://127.0.0.1:{port}/healthz"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
        with pytest.raises(OSError):  # bound to 127.0.0.1 alone, not every interface
            await asyncio.open_connection("::1", port)


async def test_probes_leave_no_access_log_lines(
    running_bot: StartBot, caplog: pytest.LogCaptureFixture
) -> None:
    """A probe every few seconds would otherwise fill the journal."""
    caplog.set_level(logging.INFO)
    async with running_bot("127.0.0.1:0") as bot:
        url = f"http://127.0.0.1:{port_of(bot)}/healthz"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
    access = [r for r in caplog.records if r.name == "aiohttp.access"]
    assert [r.getMessage() for r in access if "/healthz" in r.getMessage()] == []
