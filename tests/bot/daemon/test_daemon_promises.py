"""The daemon's limits as the README promises them, seen where an operator or a person
meets them: the systemd notify socket, `/healthz` over HTTP, the chat, the CLI, signals to
`lorebot run`, and the fake Ollama and Slack servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import signal
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.http_retry import builtin_async_handlers

from adapters.base import APPROVE
from adapters.slack.adapter import SlackAdapter
from bot.cli.main import main
from bot.config.settings import SystemdEnvironment
from bot.core.fallback import OFFLINE_NOTICE
from bot.daemon.app import Bot
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.clock import FakeClock
from tests.support.daemon import daemon, daemon_env
from tests.support.harness import Harness, make_settings, start_harness
from tests.support.polling import until
from tests.support.skills import write_skill

SLOW = "slow-query"


@dataclass
class GatedOllama(FakeOllama):
    """The fake Ollama with a gate on chat answers (open unless held) and embeddings of any
    text containing `SLOW` that wait until released, as a busy or stuck server would."""

    in_flight: int = field(default=0, init=False)
    peak: int = field(default=0, init=False)
    chats_open: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    slow_embeds: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    def hold_chats(self) -> None:
        self.chats_open.clear()

    def release_chats(self) -> None:
        self.chats_open.set()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.chats_open.wait()
            return await super()._chat(request)
        finally:
            self.in_flight -= 1

    async def _record(self, request: web.Request) -> dict[str, Any] | None:
        body = await super()._record(request)
        if request.path == "/api/embed" and SLOW in json.dumps(body):
            await self.slow_embeds.wait()
        return body


@pytest.fixture
async def gated_ollama() -> AsyncIterator[GatedOllama]:
    fake = GatedOllama()
    fake.release_chats()
    await fake.start()
    try:
        yield fake
    finally:
        fake.release_chats()
        fake.slow_embeds.set()
        await fake.close()


@pytest.fixture
async def gated(
    tmp_path: Path, gated_ollama: GatedOllama, clock: FakeClock
) -> AsyncIterator[Harness]:
    h = await start_harness(tmp_path, gated_ollama, clock, bot={"max_concurrent_model_calls": 1})
    try:
        yield h
    finally:
        gated_ollama.release_chats()
        await h.bot.stop()


def held(h: Harness) -> GatedOllama:
    assert isinstance(h.ollama, GatedOllama)
    return h.ollama


def echo_question(body: dict[str, Any]) -> str:
    """Answer each question by naming it (the person's text ends the last message)."""
    return "answer to " + body["messages"][-1]["content"].splitlines()[-1]


# --- systemd and health -------------------------------------------------------------------


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.setblocking(False)
    yield sock
    sock.close()


async def datagram_with(sock: socket.socket, text: str, within: float = 5.0) -> None:
    """Read notify datagrams until one contains `text`."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(within):
        while text not in (await loop.sock_recv(sock, 4096)).decode():
            pass


def received(sock: socket.socket) -> list[str]:
    """The notify datagrams waiting in the socket, without waiting for more."""
    found = []
    while True:
        try:
            found.append(sock.recv(4096).decode())
        except BlockingIOError:
            return found


class LaggingClock:
    """A monotonic clock on which each reading is a second after the one before: every
    short sleep of the watchdog loop seems to take a second, as on a stalled event loop."""

    def __init__(self) -> None:
        self.now = time.monotonic()
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += 1.0
        return self.now


async def fetch_health(bot: Bot) -> tuple[int, dict[str, Any]]:
    assert bot.supervisor.health is not None
    url = f"http://127.0.0.1:{bot.supervisor.health.port}/healthz"
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.json()


async def test_the_watchdog_starves_while_the_event_loop_lags_and_is_fed_once_it_keeps_time(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, notify_socket: socket.socket
) -> None:
    settings = make_settings(
        tmp_path / "bot.db", fake_ollama.url, observability={"listen": "127.0.0.1:0"}
    )
    systemd = SystemdEnvironment(str(tmp_path / "notify.sock"), watchdog_usec=30_000)
    bot = Bot(settings, [RecordingAdapter()], clock=clock, systemd=systemd)
    await bot.start()
    try:
        await datagram_with(notify_socket, "WATCHDOG=1")
        lagging = LaggingClock()
        received(notify_socket)  # what was sent while on time
        bot.supervisor.monotonic = lagging
        await until(lambda: lagging.readings >= 9)  # three rounds of the watchdog loop
        assert [m for m in received(notify_socket) if "WATCHDOG=1" in m] == []
        status, health = await fetch_health(bot)
        assert status == 200 and health["loop_lag_s"] > 0.9  # the lag is reported

        bot.supervisor.monotonic = time.monotonic
        await datagram_with(notify_socket, "WATCHDOG=1")
    finally:
        await bot.stop()


async def test_healthz_is_503_while_an_adapter_stays_disconnected_and_200_once_it_is_back(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    settings = make_settings(
        tmp_path / "bot.db",
        fake_ollama.url,
        bot={"adapter_grace_s": 0.01},
        observability={"listen": "127.0.0.1:0"},
    )
    adapter = RecordingAdapter()
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    try:
        assert (await fetch_health(bot))[0] == 200
        adapter.connected = False  # the platform connection dropped and stays down
        async with asyncio.timeout(5):
            while (answer := await fetch_health(bot))[0] != 503:  # noqa: ASYNC110 (over HTTP)
                await asyncio.sleep(0.005)
        assert answer[1]["status"] == "unhealthy" and answer[1]["adapters"] == {"test": False}

        adapter.connected = True
        status, health = await fetch_health(bot)
        assert status == 200 and health["status"] == "ok"
    finally:
        await bot.stop()


# --- the model ----------------------------------------------------------------------------


async def test_after_the_model_fails_it_is_not_asked_again_until_the_backoff_passes(
    harness: Harness,
) -> None:
    harness.ollama.error(500, "llama runner process has terminated")
    await harness.say("which host runs staging?")
    assert harness.adapter.replies[-1].startswith(OFFLINE_NOTICE)
    asked = len(harness.ollama.chat_requests)

    await harness.say("and which one runs production?")
    assert harness.adapter.replies[-1].startswith(OFFLINE_NOTICE)
    assert len(harness.ollama.chat_requests) == asked  # left alone during the backoff


async def test_max_concurrent_model_calls_bounds_the_model_calls_in_flight(gated: Harness) -> None:
    fake = held(gated)
    fake.default_reply = echo_question
    fake.hold_chats()
    for channel in ("C1", "C2"):
        await gated.bot.dispatcher.submit(
            gated.adapter.message(f"question in {channel}", channel=channel)
        )
    await until(lambda: fake.in_flight >= 1)
    # The other conversation's turn is ready at once; give it time to (wrongly) call too.
    with pytest.raises(TimeoutError):
        await until(lambda: fake.in_flight > 1, within=0.5)

    fake.release_chats()
    await gated.bot.dispatcher.wait_idle()
    assert sorted(gated.adapter.replies) == ["answer to question in C1", "answer to question in C2"]
    assert fake.peak == 1


async def test_a_conversations_messages_are_answered_in_the_order_they_came(
    gated: Harness,
) -> None:
    fake = held(gated)
    fake.default_reply = echo_question
    fake.hold_chats()
    await gated.bot.dispatcher.submit(gated.adapter.message("first question"))
    await until(lambda: fake.in_flight == 1)
    for text in ("second question", "third question"):  # queued behind the first
        await gated.bot.dispatcher.submit(gated.adapter.message(text))

    fake.release_chats()
    await gated.bot.dispatcher.wait_idle()
    assert gated.adapter.replies == [
        "answer to first question",
        "answer to second question",
        "answer to third question",
    ]


async def test_a_slow_tool_call_times_out_and_the_model_is_told(
    tmp_path: Path, gated_ollama: GatedOllama, clock: FakeClock
) -> None:
    gated_ollama.models = ["qwen3:8b", "nomic-embed-text"]
    settings = make_settings(
        tmp_path / "bot.db",
        gated_ollama.url,
        ollama={"embed_model": "nomic-embed-text"},
        bot={"tool_timeout_s": 0.2},
    )
    # With the embedding task running: stopping just after a commit must not hang.
    adapter = RecordingAdapter()
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    h = Harness(bot, adapter, gated_ollama, clock)
    try:
        # The search embeds its query, and the embedding server does not answer in time.
        gated_ollama.tool_call("memory_search", {"query": f"{SLOW} rollout"})
        gated_ollama.reply("The search took too long; ask me again in a minute.")
        await h.say("what did we decide about the rollout?")

        told = gated_ollama.chat_requests[-1]["messages"][-1]
        assert told == {
            "role": "tool",
            "tool_name": "memory_search",
            "content": "error: memory_search timed out",
        }
        assert adapter.replies == ["The search took too long; ask me again in a minute."]
    finally:
        gated_ollama.slow_embeds.set()
        await bot.stop()


# --- skills -------------------------------------------------------------------------------


async def test_a_channel_limited_to_some_skills_offers_and_starts_only_those(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    for name in ("alpha", "beta"):
        write_skill(tmp_path / "user-skills", name, description=f"The {name} runbook. Use when x.")
    h = await start_harness(
        tmp_path, fake_ollama, clock, skills={"channels": {"channel:test/C1": ["alpha"]}}
    )
    try:
        await h.say("/beta", channel="C1")
        assert h.adapter.replies[-1] == "⚠️ there is no skill 'beta' here; available: alpha"
        await h.say("how do we roll out?", channel="C1")
        catalog = h.last_prompt()[0]["content"]
        assert "- alpha: The alpha runbook." in catalog and "- beta:" not in catalog

        await h.say("/beta", channel="C2")  # no limit there
        assert h.adapter.replies[-1] == "🧩 The skill `beta` is active here now."
        await h.say("how do we roll out?", channel="C2")
        assert "- beta: The beta runbook." in h.last_prompt()[0]["content"]
    finally:
        await h.bot.stop()


# --- commands that need no model ----------------------------------------------------------


async def test_remember_colon_proposes_a_note_for_the_channel(harness: Harness) -> None:
    harness.script_title("deploy-day", "deploys happen on tuesdays")
    await harness.say("remember: deploys happen on tuesdays", channel="C1")
    [card] = harness.adapter.cards
    assert "this channel (channel:test/C1)" in card.text
    await harness.react(card, APPROVE)

    await harness.say("what do you remember", channel="C1")
    assert "`deploy-day`: deploys happen on tuesdays" in harness.adapter.replies[-1]
    await harness.say("what do you remember", channel="C2")
    assert "deploy-day" not in harness.adapter.replies[-1]


async def test_remember_for_me_in_a_channel_proposes_a_note_of_your_own(harness: Harness) -> None:
    harness.script_title("editor", "uses vim")
    await harness.say("remember for me the editor is vim", channel="C1")
    [card] = harness.adapter.cards
    assert "your notes (user:test/UALICE)" in card.text
    await harness.react(card, APPROVE)

    await harness.say("what do you remember", channel="C2")  # it follows its person
    assert "`editor`: uses vim" in harness.adapter.replies[-1]
    await harness.say("what do you remember", channel="C1", user="UBOB")
    assert "editor" not in harness.adapter.replies[-1]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def change_id(out: str) -> str:
    found = re.search(r"\(change (\d+)", out)
    assert found, out
    return found.group(1)


def test_notes_revert_restores_a_note_as_it_was_before_that_change(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scope = "channel:slack/C1"
    run_cli(capsys, "notes", "add", scope, "vpn", "the VPN gateway is vpn-1")
    _, out = run_cli(capsys, "notes", "add", scope, "vpn", "the VPN gateway is vpn-2")
    update = change_id(out)
    run_cli(capsys, "notes", "add", scope, "wiki", "the wiki is docs.internal")

    code, out = run_cli(capsys, "notes", "revert", update)  # not the latest change
    assert code == 0 and out.startswith(f"restored {scope} / vpn")
    _, out = run_cli(capsys, "notes", "show", scope, "vpn")
    assert "vpn-1" in out and "vpn-2" not in out
    _, out = run_cli(capsys, "notes", "show", scope, "wiki")
    assert "docs.internal" in out  # later changes stay

    _, out = run_cli(capsys, "notes", "forget", scope, "wiki")
    code, out = run_cli(capsys, "notes", "revert", change_id(out))
    assert code == 0 and out.startswith(f"restored {scope} / wiki")
    _, out = run_cli(capsys, "notes", "list")
    assert "wiki" in out and "vpn" in out


# --- shutdown -----------------------------------------------------------------------------


async def test_shutdown_gives_an_unfinished_turn_at_most_shutdown_timeout_s(
    tmp_path: Path, gated_ollama: GatedOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.daemon.app")
    h = await start_harness(
        tmp_path, gated_ollama, clock, ollama={"timeout_s": 60}, bot={"shutdown_timeout_s": 0.2}
    )
    try:
        gated_ollama.hold_chats()  # a model that will not answer for a long while
        await h.bot.dispatcher.submit(h.adapter.message("think very hard"))
        await until(lambda: gated_ollama.in_flight == 1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with asyncio.timeout(10):
            await h.bot.stop()
        assert 0.2 <= loop.time() - started < 10
    finally:
        gated_ollama.release_chats()
        await h.bot.stop()
    assert h.adapter.replies == []
    assert "stopped before finishing 1 conversation(s)" in caplog.text


async def test_a_second_sigterm_exits_at_once(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, notify_socket: socket.socket
) -> None:
    fake_ollama.delay(60)  # the turn in flight would hold the first shutdown for a minute
    env = daemon_env(tmp_path, fake_ollama, fake_slack)
    env.update(LOREBOT_BOT__SHUTDOWN_TIMEOUT_S="60", NOTIFY_SOCKET=str(tmp_path / "notify.sock"))
    async with daemon(tmp_path, env) as process:
        await datagram_with(notify_socket, "READY=1", within=30)
        await fake_slack.push(fake_slack.app_mention("<@UBOT> think very hard"), within=10)
        await fake_ollama.wait_for_requests(1, within=10)
        process.send_signal(signal.SIGTERM)
        await datagram_with(notify_socket, "STOPPING=1", within=10)  # now draining
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            code = await process.wait()
    assert code == 128 + signal.SIGTERM, (tmp_path / "daemon.log").read_text()
    assert fake_slack.posts == []


# --- Slack rate limits --------------------------------------------------------------------


async def test_a_slack_rate_limit_waits_as_long_as_retry_after_says(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    # slack-sdk's rate-limit retry sleeps Retry-After plus up to a second of jitter.
    monkeypatch.setattr(builtin_async_handlers, "asyncio", SimpleNamespace(sleep=sleep))
    monkeypatch.setattr(builtin_async_handlers, "random", random.Random(18))
    adapter = SlackAdapter(
        bot_token=fake_slack.bot_token,
        app_token=fake_slack.app_token,
        api_base_url=fake_slack.api_url,
    )
    bot = Bot(make_settings(tmp_path / "bot.db", fake_ollama.url), [adapter], clock=clock)
    await bot.start()
    try:
        fake_slack.rate_limit("chat.postMessage", retry_after=7)
        fake_ollama.reply("Here after the wait.")
        await fake_slack.push(fake_slack.app_mention("<@UBOT> ping"))
        await adapter.wait_delivered()
        await bot.dispatcher.wait_idle()
    finally:
        await bot.stop()
    assert [p.text for p in fake_slack.posts] == ["Here after the wait."]
    assert len(waits) == 1 and 7 <= waits[0] < 8


async def test_stopping_right_after_a_message_with_embeddings_on_does_not_hang(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    """The embedding task waits for commits; a stop just after one must still end it."""
    fake_ollama.models = ["qwen3:8b", "nomic-embed-text"]
    h = await start_harness(
        tmp_path, fake_ollama, clock, ollama={"embed_model": "nomic-embed-text"}
    )
    fake_ollama.reply("done")
    await h.say("what did we decide about the rollout?")
    async with asyncio.timeout(10):
        await h.bot.stop()
    assert h.adapter.replies == ["done"]
