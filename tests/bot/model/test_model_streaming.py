"""Streamed chat calls: the answer's content reaches the caller piece by piece as Ollama
sends it, the call returns what a non-streaming call would, and a failure mid-stream is the
same `ModelUnavailable` as any other while a failure of the receiver stays the receiver's."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from bot.config.model_sections import OllamaSettings
from bot.model.client import ChatResult, Model, ModelUnavailable, ToolCall
from bot.model.ollama import new_backoff
from tests.fakes.ollama import FakeOllama

QUESTION = [{"role": "user", "content": "where is the staging database?"}]


class Pieces:
    """An `on_content` that records what it receives."""

    def __init__(self) -> None:
        self.received: list[str] = []

    async def __call__(self, delta: str) -> None:
        self.received.append(delta)


def make_model(fake: FakeOllama, **ollama: Any) -> Model:
    settings = OllamaSettings(host=fake.url, **{"timeout_s": 2.0, **ollama})
    return Model(settings, max_concurrent=1, backoff=new_backoff(random.Random(1)))


@pytest.fixture
async def model(fake_ollama: FakeOllama) -> AsyncIterator[Model]:
    model = make_model(fake_ollama)
    try:
        yield model
    finally:
        await model.close()


def latency_count() -> float:
    return REGISTRY.get_sample_value("lorebot_model_latency_seconds_count") or 0.0


async def assert_refused_at_once(model: Model, fake: FakeOllama, kind: str) -> None:
    """The model is backing off: the next call fails at once, without asking Ollama."""
    asked = len(fake.chat_requests)
    with pytest.raises(ModelUnavailable) as refused:
        await model.chat(QUESTION, on_content=Pieces())
    assert refused.value.kind == kind
    assert len(fake.chat_requests) == asked


async def assert_asked_again(model: Model, fake: FakeOllama) -> None:
    fake.reply("pg-stage-2.")
    pieces = Pieces()
    assert (await model.chat(QUESTION, on_content=pieces)).content == "pg-stage-2."
    assert pieces.received == ["pg-stage-2."]


# --- the answer, piece by piece -----------------------------------------------------------


async def test_content_arrives_in_order_and_joins_to_the_answer(
    model: Model, fake_ollama: FakeOllama
) -> None:
    fake_ollama.reply("Staging runs on pg-stage-2.")
    pieces = Pieces()
    observed = latency_count()

    result = await model.chat(QUESTION, on_content=pieces)

    assert pieces.received == ["Staging ", "runs ", "on ", "pg-stage-2."]
    assert result == ChatResult("Staging runs on pg-stage-2.")
    assert fake_ollama.chat_requests[-1]["stream"] is True
    assert latency_count() == observed + 1


async def test_without_on_content_the_call_is_not_streamed(
    model: Model, fake_ollama: FakeOllama
) -> None:
    fake_ollama.reply("Staging runs on pg-stage-2.")
    assert (await model.chat(QUESTION)).content == "Staging runs on pg-stage-2."
    assert fake_ollama.chat_requests[-1]["stream"] is False


async def test_tool_calls_sent_before_the_last_line_are_returned(
    model: Model, fake_ollama: FakeOllama
) -> None:
    call = {"name": "memory_search", "arguments": {"query": "staging"}}
    fake_ollama.reply("Let me look.", tool_calls=[call])  # the calls come in their own line
    pieces = Pieces()

    result = await model.chat(QUESTION, tools=[], on_content=pieces)

    assert result.tool_calls == (ToolCall("memory_search", {"query": "staging"}),)
    assert result.content == "Let me look." and "".join(pieces.received) == "Let me look."


async def test_thinking_is_kept_but_never_passed_on(model: Model, fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("On pg-stage-2.", thinking="The notes say staging is pg-stage-2.")
    pieces = Pieces()

    result = await model.chat(QUESTION, on_content=pieces)

    assert pieces.received == ["On ", "pg-stage-2."]
    assert result.thinking == "The notes say staging is pg-stage-2."


Script = Callable[[FakeOllama], None]
SCRIPTS: dict[str, Script] = {
    "content and thinking": lambda f: f.reply("On pg-stage-2.", thinking="Notes say so."),
    "tool call": lambda f: f.tool_call("memory_search", {"query": "vpn"}, content="Looking."),
    "arguments as a JSON string": lambda f: f.tool_call("memory_search", '{"query": "vpn"}'),
    "tool_calls not a list": lambda f: f.raw_message({"content": "", "tool_calls": 5}),
    "a call without a name": lambda f: f.reply(tool_calls=[{"function": {"arguments": {}}}]),
    "message not an object": lambda f: f.raw_message(["on", "pg-stage-2"]),
}


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
async def test_a_streamed_answer_reads_as_the_same_answer_not_streamed(
    model: Model, fake_ollama: FakeOllama, script: Script
) -> None:
    script(fake_ollama)
    streamed = await model.chat(QUESTION, on_content=Pieces())
    script(fake_ollama)
    assert streamed == await model.chat(QUESTION)


# --- the model failing --------------------------------------------------------------------


@pytest.mark.parametrize("error", ["llama runner process has terminated", "503"])
async def test_an_error_line_after_partial_content_marks_the_model_down(
    model: Model, fake_ollama: FakeOllama, error: str
) -> None:
    fake_ollama.stream_error(error, partial="Staging runs")
    pieces = Pieces()
    observed = latency_count()

    with pytest.raises(ModelUnavailable) as failed:
        await model.chat(QUESTION, on_content=pieces)

    assert pieces.received == ["Staging ", "runs"]  # passed on before the failure came
    assert failed.value.kind == "failing"
    assert str(failed.value) == f"Ollama at {fake_ollama.url} failed: {error}"
    assert latency_count() == observed + 1
    assert not model.available and not model.reachable
    await assert_refused_at_once(model, fake_ollama, "failing")


async def test_a_connection_dropped_midway_marks_the_model_unreachable(
    model: Model, fake_ollama: FakeOllama
) -> None:
    fake_ollama.stream_cut(partial="Staging runs")
    pieces = Pieces()

    with pytest.raises(ModelUnavailable) as failed:
        await model.chat(QUESTION, on_content=pieces)

    assert pieces.received == ["Staging ", "runs"]
    assert failed.value.kind == "unreachable"
    assert "the connection broke" in str(failed.value)
    assert not model.available
    await assert_refused_at_once(model, fake_ollama, "unreachable")


async def test_a_missing_model_is_missing_when_streaming(
    model: Model, fake_ollama: FakeOllama
) -> None:
    fake_ollama.error(404, "model 'qwen3:8b' not found")  # removed with `ollama rm`
    pieces = Pieces()

    with pytest.raises(ModelUnavailable) as failed:
        await model.chat(QUESTION, on_content=pieces)

    assert failed.value.kind == "missing" and failed.value.fix == "ollama pull qwen3:8b"
    assert str(failed.value) == f"qwen3:8b is not installed at {fake_ollama.url}"
    assert pieces.received == []
    await assert_refused_at_once(model, fake_ollama, "missing")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('{"message": {"content": "Stag"}, "done": false}\n{"message": {"conte', "JSONDecodeError"),
        ('{"message": {"content": "Stag"}, "done": false}\n', "IncompleteStream"),
    ],
    ids=["undecodable line", "no last line"],
)
async def test_an_unreadable_stream_fails_that_call_only(
    model: Model, fake_ollama: FakeOllama, body: str, why: str
) -> None:
    fake_ollama.raw(body)
    pieces = Pieces()

    with pytest.raises(ModelUnavailable) as failed:
        await model.chat(QUESTION, on_content=pieces)

    assert pieces.received == ["Stag"]
    assert failed.value.kind == "unreadable"
    assert str(failed.value) == f"qwen3:8b sent an unreadable reply ({why})"
    assert model.available  # one bad reply: the model is asked again at once
    await assert_asked_again(model, fake_ollama)


async def test_a_model_that_does_not_start_answering_in_time_is_unreachable(
    fake_ollama: FakeOllama,
) -> None:
    model = make_model(fake_ollama, timeout_s=0.2)
    fake_ollama.delay(30)
    try:
        with pytest.raises(ModelUnavailable) as failed:
            async with asyncio.timeout(10):
                await model.chat(QUESTION, on_content=Pieces())
        assert failed.value.kind == "unreachable"
        assert "no answer within 0.2 s" in str(failed.value)
        assert not model.available
    finally:
        await model.close()


async def test_the_time_the_receiver_takes_counts_towards_the_timeout(
    fake_ollama: FakeOllama,
) -> None:
    model = make_model(fake_ollama, timeout_s=0.2)
    never = asyncio.Event()

    async def stuck(delta: str) -> None:
        await never.wait()

    try:
        with pytest.raises(ModelUnavailable) as failed:
            async with asyncio.timeout(10):
                await model.chat(QUESTION, on_content=stuck)
        assert "no answer within 0.2 s" in str(failed.value)
    finally:
        await model.close()


# --- the receiver failing -----------------------------------------------------------------


class EditRefused(Exception):
    """What a platform adapter might raise when it cannot show a piece."""


@pytest.mark.parametrize(
    "error",
    [EditRefused("message_not_found"), ValueError("bad block"), TimeoutError("edit timed out")],
    ids=["platform error", "ValueError", "TimeoutError"],
)
async def test_what_on_content_raises_propagates_and_the_model_stays_available(
    model: Model, fake_ollama: FakeOllama, error: Exception
) -> None:
    fake_ollama.reply("Staging runs on pg-stage-2.")
    pieces: list[str] = []

    async def refuse(delta: str) -> None:
        pieces.append(delta)
        if len(pieces) == 2:
            raise error

    with pytest.raises(type(error)) as raised:
        await model.chat(QUESTION, on_content=refuse)

    assert raised.value is error
    assert pieces == ["Staging ", "runs "]  # nothing more after the receiver failed
    assert model.available and model.backoff.failures == 0
    await assert_asked_again(model, fake_ollama)  # and the one turn is free again


async def test_cancelled_while_passing_content_on_the_model_stays_available(
    model: Model, fake_ollama: FakeOllama
) -> None:
    fake_ollama.reply("Staging runs on pg-stage-2.")
    arrived, never = asyncio.Event(), asyncio.Event()

    async def slow(delta: str) -> None:
        arrived.set()
        await never.wait()

    call = asyncio.create_task(model.chat(QUESTION, on_content=slow))
    async with asyncio.timeout(5):
        await arrived.wait()
    call.cancel()  # shutting down

    with pytest.raises(asyncio.CancelledError):
        await call
    assert model.available and model.backoff.failures == 0
    await assert_asked_again(model, fake_ollama)
