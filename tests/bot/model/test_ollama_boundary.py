"""The boundary to Ollama as operators and people meet it: a server that takes connections
and never answers, `/healthz` while Ollama is down and back, `OLLAMA_HOST`, the backoff
after a failure, and each kind of failure turned into the right lorebot error."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.backoff import Backoff
from bot.cli.main import main
from bot.config.model_sections import OllamaSettings
from bot.core.fallback import OFFLINE_NOTICE, UNREADABLE_NOTICE
from bot.daemon.app import Bot
from bot.model.client import Model, ModelUnavailable
from bot.model.ollama import OllamaEmbedder, new_backoff
from memory.errors import EmbedderUnavailable
from memory.sqlite.database import SqliteDatabase
from tests.fakes.adapter import RecordingAdapter, StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, make_settings, start_harness
from tests.support.paths import ROOT as ROOT

# Far below the generation timeout the CLI tests set (600 s), which start-up used to wait
# for; starting Python and importing lorebot alone can take several seconds on a busy
# machine.
DEADLINE_S = 60.0


async def until(condition: Any, within: float = 5.0) -> None:
    """Poll `condition` until it holds, failing after `within` seconds."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 (state outside the loop's reach)
            await asyncio.sleep(0.005)


@dataclass
class HangingOllama:
    """An HTTP server on 127.0.0.1 that takes every request and never answers it."""

    paths: list[str] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._hang)
        self._runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _hang(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        await self._release.wait()
        return web.Response(status=503)

    async def close(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def hanging() -> AsyncIterator[HangingOllama]:
    server = HangingOllama()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


class Seconds:
    """A monotonic clock tests move by hand."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    seconds: float


def cli_env(tmp_path: Path, **values: str) -> dict[str, str]:
    """The `env` fixture's environment for a subprocess, with a home of its own."""
    environment = {**os.environ, "HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    environment["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    environment.pop("OLLAMA_HOST", None)
    return {**environment, **values}


async def run_cli(environment: dict[str, str], *argv: str, stdin: str = "") -> Run:
    """Run `lorebot ARGV…` as a person would, failing the test past `DEADLINE_S`."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        *argv,
        cwd=ROOT,
        env=environment,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(DEADLINE_S):
            out, err = await process.communicate(stdin.encode())
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode(), time.monotonic() - started)


async def fetch_health(bot: Bot) -> tuple[int, dict[str, Any]]:
    assert bot.supervisor.health is not None
    url = f"http://127.0.0.1:{bot.supervisor.health.port}/healthz"
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.json()


# --- an Ollama that takes connections and never answers -----------------------------------


async def test_chat_starts_and_answers_offline_while_ollama_never_answers(
    env: Path, hanging: HangingOllama
) -> None:
    environment = cli_env(env, LOREBOT_OLLAMA__HOST=hanging.url, LOREBOT_OLLAMA__TIMEOUT_S="600")
    run = await run_cli(environment, "chat", "--user", "alice", stdin="where is staging?\n")

    assert run.code == 0, run.err
    assert f"lorebot> {OFFLINE_NOTICE}" in run.out
    assert "/api/show" in hanging.paths  # probed, and given up on after its own timeout


@pytest.mark.parametrize("embed_model", [None, "nomic-embed-text"])
async def test_jobs_list_returns_while_ollama_never_answers(
    env: Path, hanging: HangingOllama, embed_model: str | None
) -> None:
    db = await SqliteDatabase.open(env / "cli.db")
    await db.close()
    extra = {"LOREBOT_OLLAMA__EMBED_MODEL": embed_model} if embed_model else {}
    environment = cli_env(
        env, LOREBOT_OLLAMA__HOST=hanging.url, LOREBOT_OLLAMA__TIMEOUT_S="600", **extra
    )
    run = await run_cli(environment, "jobs", "list")

    assert run.code == 0, run.err
    assert "reflection" in run.out and "maintenance" in run.out
    # Listing jobs needs no chat model; at most the embedding model is asked, briefly.
    assert hanging.paths in ([], ["/api/embed"] if embed_model else [])


async def test_start_and_stop_never_wait_for_the_model(
    tmp_path: Path, hanging: HangingOllama, clock: FakeClock
) -> None:
    settings = make_settings(tmp_path / "bot.db", hanging.url, ollama={"timeout_s": 3600})
    bot = Bot(settings, [RecordingAdapter()], clock=clock)
    async with asyncio.timeout(3):  # less than the probe's own timeout, too
        await bot.start()
    try:
        await until(lambda: hanging.paths == ["/api/show"])  # probed in the background
    finally:
        async with asyncio.timeout(10):
            await bot.stop()


async def test_turns_and_health_answer_while_the_probe_gets_no_answer(
    tmp_path: Path, hanging: HangingOllama, clock: FakeClock
) -> None:
    settings = make_settings(
        tmp_path / "bot.db",
        hanging.url,
        ollama={"timeout_s": 3600, "probe_timeout_s": 0.2},
        observability={"listen": "127.0.0.1:0"},
    )
    adapter = RecordingAdapter()
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    try:
        async with asyncio.timeout(10):
            await bot.dispatcher.submit(adapter.message("where is staging?"))
            await bot.dispatcher.wait_idle()
            status, health = await fetch_health(bot)
        assert adapter.replies[-1].startswith(OFFLINE_NOTICE)
        assert status == 200  # lorebot works without its model
        assert health["model"]["reachable"] is False
        assert "no answer within 0.2 s" in health["model"]["problem"]
    finally:
        await bot.stop()


# --- /healthz -----------------------------------------------------------------------------


async def test_healthz_says_reachable_only_after_the_model_answered(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    await fake_ollama.down()  # Ollama is not running
    settings = make_settings(
        tmp_path / "bot.db", fake_ollama.url, observability={"listen": "127.0.0.1:0"}
    )
    adapter = RecordingAdapter()
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    try:
        seconds = Seconds()
        bot.model.monotonic = seconds
        status, health = await fetch_health(bot)
        assert status == 200 and health["model"]["reachable"] is False
        assert "cannot connect" in health["model"]["problem"]
        seconds.advance(3600)  # every backoff is over; Ollama is still down
        assert (await fetch_health(bot))[1]["model"]["reachable"] is False

        await fake_ollama.up()
        assert await bot.model.probe() is not None
        status, health = await fetch_health(bot)
        assert status == 200 and health["model"]["reachable"] is True
        assert "problem" not in health["model"]

        fake_ollama.error(404, "model 'qwen3:8b' not found")  # removed with `ollama rm`
        await bot.dispatcher.submit(adapter.message("where is staging?"))
        await bot.dispatcher.wait_idle()
        assert adapter.replies[-1].startswith(OFFLINE_NOTICE)
        health = (await fetch_health(bot))[1]["model"]
        assert health["reachable"] is False
        assert health["problem"].startswith("qwen3:8b is not installed at")
    finally:
        await bot.stop()


async def test_the_background_probe_finds_the_model_once_ollama_is_back(
    fake_ollama: FakeOllama,
) -> None:
    await fake_ollama.down()
    settings = OllamaSettings(host=fake_ollama.url, probe_timeout_s=1.0)
    model = Model(settings, backoff=Backoff(0.01, 0.02, rng=random.Random(1)))
    watching = asyncio.create_task(model.watch())
    try:
        await until(lambda: model.backoff.failures >= 2)  # it keeps asking, backing off
        assert not model.reachable
        await fake_ollama.up()
        await until(lambda: model.reachable)
        assert model.info.context_length == fake_ollama.context_length
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
        await model.close()


# --- OLLAMA_HOST --------------------------------------------------------------------------


async def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    await asyncio.to_thread(main, [*argv, "doctor"])
    return capsys.readouterr().out


async def test_ollama_host_is_used_when_lorebot_has_no_host_setting(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.url.removeprefix("http://"))  # as Ollama's
    out = await doctor(capsys)
    assert f"✓ model: qwen3:8b at {fake_ollama.url}," in out
    assert fake_ollama.requests_to("/api/show") == [{"model": "qwen3:8b"}]


@pytest.mark.parametrize("where", ["environment", "config file"])
async def test_ollama_host_is_ignored_when_lorebot_has_a_host_setting(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.url)
    nowhere = "http://127.0.0.1:9"  # nothing listens there
    argv: list[str] = []
    if where == "environment":
        monkeypatch.setenv("LOREBOT_OLLAMA__HOST", nowhere)
    else:
        config = env / "lorebot.toml"
        config.write_text(f'[ollama]\nhost = "{nowhere}"\n')
        argv = ["--config", str(config)]
    out = await doctor(capsys, *argv)
    assert f"✗ model: unreachable at {nowhere} (cannot connect)" in out
    assert fake_ollama.requests == []


# --- one backoff --------------------------------------------------------------------------


async def test_after_a_failure_the_model_is_asked_again_only_once_the_backoff_passed(
    harness: Harness,
) -> None:
    seconds = Seconds()
    model = harness.bot.model
    model.monotonic = seconds
    model.backoff = new_backoff(rng=random.Random(7))
    reference = new_backoff(random.Random(7))
    first, second = reference.next_delay(), reference.next_delay()
    assert 1.0 <= first <= 2.0 and 2.0 <= second <= 4.0 and first != 2.0  # jittered

    harness.ollama.error(500, "llama runner process has terminated")
    await harness.say("which host runs staging?")
    asked = len(harness.ollama.chat_requests)
    seconds.advance(first - 0.01)
    await harness.say("and production?")
    assert harness.adapter.replies[-1].startswith(OFFLINE_NOTICE)
    assert len(harness.ollama.chat_requests) == asked  # left alone during the backoff

    seconds.advance(0.02)
    harness.ollama.error(500, "still loading")
    await harness.say("and production, now?")
    assert len(harness.ollama.chat_requests) == asked + 1  # asked again, failed again
    seconds.advance(second - 0.01)  # the second wait is about twice as long
    await harness.say("and now?")
    assert len(harness.ollama.chat_requests) == asked + 1

    seconds.advance(0.02)
    harness.ollama.reply("prod-1.")
    await harness.say("and now?")
    assert harness.adapter.replies[-1] == "prod-1."
    assert model.backoff.failures == 0  # an answer starts the backoff over


def test_backoff_doubles_up_to_its_maximum_with_jitter_and_starts_over_after_reset() -> None:
    backoff = Backoff(1.0, 8.0, jitter=0.5, rng=random.Random(3))
    delays = [backoff.next_delay() for _ in range(6)]
    for delay, base in zip(delays, [1, 2, 4, 8, 8, 8], strict=True):
        assert base / 2 <= delay <= base
    assert len(set(delays)) == 6  # spread out, not in lockstep
    backoff.reset()
    assert backoff.next_delay() <= 1.0


# --- errors mapped in one place -----------------------------------------------------------


async def fail(harness: Harness, failure: str) -> None:
    """Make the next chat call fail the way `failure` names."""
    fake = harness.ollama
    if failure == "500":
        fake.error(500, "llama runner process has terminated")
    elif failure == "404":
        fake.error(404, "model 'qwen3:8b' not found")
    elif failure == "refused":
        await fake.down()
    else:
        fake.raw('{"model": "qwen3:8b", "message": {"content": "unfinis')


@pytest.mark.parametrize(
    ("failure", "kind", "detail", "reachable"),
    [
        ("500", "failing", "Ollama at {url} failed: llama runner process has terminated", False),
        ("404", "missing", "qwen3:8b is not installed at {url}", False),
        ("refused", "unreachable", "unreachable at {url} (cannot connect)", False),
        ("bad json", "unreadable", "qwen3:8b sent an unreadable reply (JSONDecodeError)", True),
    ],
)
async def test_each_failure_of_ollama_becomes_an_offline_answer_and_its_own_error(
    harness: Harness,
    caplog: pytest.LogCaptureFixture,
    failure: str,
    kind: str,
    detail: str,
    reachable: bool,
) -> None:
    await harness.bot.model.probe()
    await fail(harness, failure)
    with caplog.at_level(logging.INFO, logger="bot.core.agent"):
        await harness.say("where is the staging database?")

    notice = UNREADABLE_NOTICE if kind == "unreadable" else OFFLINE_NOTICE
    assert harness.adapter.replies[-1].startswith(notice)
    expected = detail.format(url=harness.ollama.url)
    assert f"answering offline: {expected}" in caplog.text
    model, asked = harness.bot.model, len(harness.ollama.chat_requests)
    assert model.reachable is reachable
    again = [{"role": "user", "content": "again?"}]
    if reachable:  # one bad reply: the model is asked again at once
        assert (await model.chat(again)).content == "ok"
        return
    with pytest.raises(ModelUnavailable) as refused:  # backing off: refused at once
        await model.chat(again)
    assert refused.value.kind == kind and str(refused.value).startswith(expected)
    assert len(harness.ollama.chat_requests) == asked


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (
            "404",
            "no embeddings from embed-test:latest: embed-test:latest is not installed at "
            "{url}: run `ollama pull embed-test:latest`",
        ),
        ("refused", "no embeddings from embed-test:latest: unreachable at {url} (cannot connect)"),
    ],
)
async def test_embeddings_fail_through_the_same_mapping_and_say_when_to_retry(
    fake_ollama: FakeOllama, failure: str, detail: str
) -> None:
    if failure == "refused":
        fake_ollama.models.append("embed-test")
        await fake_ollama.down()
    embedder = OllamaEmbedder(fake_ollama.url, "embed-test", backoff=new_backoff(random.Random(5)))
    expected = new_backoff(random.Random(5))
    try:
        for _ in range(2):
            with pytest.raises(EmbedderUnavailable) as failed:
                await embedder.embed(["where is staging?"])
            assert str(failed.value) == detail.format(url=fake_ollama.url)
            assert failed.value.retry_after == expected.next_delay()
    finally:
        await embedder.aclose()


# --- answers of the wrong shape --------------------------------------------------------------

# The shapes that crashed the OpenAI backend, as Ollama would send them. Ollama's answer is
# read as plain JSON with a type check at each step (`StreamedReply`, `parse_chat_reply`):
# a malformed call goes back to the model to correct, an answer with no message in it is an
# empty one, and the model is asked again either way; none reaches the generic apology.
WRONG_SHAPES: dict[str, Any] = {
    "arguments as a JSON string": {
        "tool_calls": [{"function": {"name": "memory_search", "arguments": '{"query": "staging"}'}}]
    },
    "tool_calls an object": {"tool_calls": {"function": {"name": "memory_search"}}},
    "a function name that is a number": {"tool_calls": [{"function": {"name": 7}}]},
    "a function that is text": {"tool_calls": [{"function": "memory_search"}]},
    "content that is a number": {"content": 42},
    "the message as text": "On pg-stage-2.",
}


@pytest.mark.parametrize("shape", [*WRONG_SHAPES, "a body that is a list"])
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_an_answer_of_the_wrong_shape_from_ollama_never_ends_in_the_apology(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, shape: str, streamed: bool
) -> None:
    adapter = StreamingAdapter() if streamed else RecordingAdapter()
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        if shape == "a body that is a list":
            line = '["On pg-stage-2."]'
        else:
            line = json.dumps({"model": "qwen3:8b", "message": WRONG_SHAPES[shape], "done": True})
        if streamed:
            fake_ollama.raw_stream([line, '{"model": "qwen3:8b", "done": true}'])
        else:
            fake_ollama.raw(line)
        fake_ollama.reply("It is on pg-stage-2.")
        await h.say("where is the staging database?")
        assert fake_ollama.chat_requests[0]["stream"] is streamed
        assert [sent.current for sent in h.adapter.sent] == ["It is on pg-stage-2."]
    finally:
        await h.bot.stop()
