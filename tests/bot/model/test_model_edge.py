"""The model is an edge like the adapters: text it writes is made valid (U+FFFD for a lone
surrogate) and numbers no JSON encoder writes back go to it as argument errors, streamed or
not. A malformed reply is never taken for a dead model: the turn is answered, the model is
told what to correct, and the next turn is answered by the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.config.model_sections import OllamaSettings
from bot.core.fallback import OFFLINE_NOTICE
from bot.model.client import Model
from tests.fakes.adapter import StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

HISTORY = "test/C1/"
REFUSED = "error: the arguments of tool call 1 are refused: "
NOT_A_NUMBER = "out of range or not a number; send a finite number"
NOTHING_FOUND = "no notes or past messages found"


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
async def h(
    request: pytest.FixtureRequest, tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Harness]:
    """A bot whose adapter shows replies as they are written (streamed), or not."""
    adapter = StreamingAdapter() if request.param else None
    harness = await start_harness(
        tmp_path, fake_ollama, clock, adapter=adapter, ollama={"show_thinking": True}
    )
    try:
        yield harness
    finally:
        await harness.bot.stop()


def streamed(h: Harness) -> bool:
    return isinstance(h.adapter, StreamingAdapter)


def answer(h: Harness, message: str, *pieces: str) -> None:
    """Queue the model's answer, its `message` JSON written by hand, byte for byte: as one
    body, or streamed as one line per piece of content and then the message."""
    start = '{"model": "qwen3:8b", "created_at": "2025-01-01T00:00:00Z", '
    if not streamed(h):
        h.ollama.raw(start + f'"done": true, "message": {message}}}')
        return
    lines = [
        start + f'"done": false, "message": {{"role": "assistant", "content": {piece}}}}}'
        for piece in pieces
    ]
    lines.append(start + f'"done": false, "message": {message}}}')
    lines.append(start + '"done": true, "message": {"role": "assistant", "content": ""}}')
    h.ollama.raw_stream(lines)


def call(arguments: str, name: str = '"memory_search"') -> str:
    """An assistant message with one tool call, its arguments' JSON as given."""
    function = f'{{"name": {name}, "arguments": {arguments}}}'
    return f'{{"role": "assistant", "content": "", "tool_calls": [{{"function": {function}}}]}}'


def shown(h: Harness) -> str:
    """What the person sees of the last reply, which the adapter must be able to send."""
    text = h.adapter.sent[-1].current
    text.encode()  # a lone surrogate raises here, as any platform's encoder would
    return text


def told(h: Harness) -> list[str]:
    """The tool results the model was sent in its last request."""
    return [m["content"] for m in h.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]


def echoed(h: Harness) -> list[dict[str, Any]]:
    """The tool calls the last request showed the model as its own."""
    [assistant] = [m for m in h.ollama.chat_requests[-1]["messages"] if m.get("tool_calls")]
    return [c["function"] for c in assistant["tool_calls"]]


async def stored_replies(h: Harness) -> list[str]:
    entries = (await h.bot.log.fetch_history(HISTORY)).entries
    return [e.content for e in entries if e.role == "assistant"]


async def assert_next_turn_answered_by_the_model(h: Harness) -> None:
    """Every scripted answer was asked for, the model is not marked down, and the next
    message is answered by the model."""
    assert h.ollama.pending == 0
    assert h.bot.model.available and h.bot.model.reachable
    asked = len(h.ollama.chat_requests)
    h.ollama.reply("Back to normal.")
    await h.say("and now?")
    assert shown(h) == "Back to normal."
    assert len(h.ollama.chat_requests) == asked + 1


def as_json_string(arguments: str) -> str:
    """Arguments written as a JSON string (OpenAI style), the text inside kept as it is."""
    return '"' + arguments.replace("\\", "\\\\").replace('"', '\\"') + '"'


NUMBERS = ["NaN", "1e400", "-Infinity", "Infinity", "-" + "9" * 400, "1" * 5000]


@pytest.mark.parametrize("number", NUMBERS, ids=["nan", "1e400", "-inf", "inf", "-9e400", "long"])
async def test_a_number_json_cannot_carry_is_an_argument_error_for_the_model(
    h: Harness, number: str
) -> None:
    answer(h, call('{"query": "vpn", "limit": ' + number + "}"), '"Let me look. "')
    h.ollama.reply("The limit was not a number, so I searched nothing.")
    await h.say("search the notes for the vpn")
    assert shown(h) == "The limit was not a number, so I searched nothing."
    written = number if len(number) <= 24 else number[:24] + "…"
    assert told(h) == [f"{REFUSED}argument 'limit' is {written}, {NOT_A_NUMBER}"]
    assert echoed(h) == [{"name": "memory_search", "arguments": {}}]
    await assert_next_turn_answered_by_the_model(h)


@pytest.mark.parametrize("number", ["NaN", "1e400", "-Infinity"])
async def test_such_a_number_in_arguments_sent_as_a_json_string_is_an_argument_error(
    h: Harness, number: str
) -> None:
    arguments = '{"query": "vpn", "limit": ' + number + "}"
    answer(h, call(as_json_string(arguments)), '""')
    h.ollama.reply("The limit was not a number, so I searched nothing.")
    await h.say("search the notes for the vpn")
    assert shown(h) == "The limit was not a number, so I searched nothing."
    assert told(h) == [f"error: argument 'limit' is {number}, {NOT_A_NUMBER}"]
    assert echoed(h) == [{"name": "memory_search", "arguments": {"raw": arguments}}]
    await assert_next_turn_answered_by_the_model(h)


@pytest.mark.parametrize("as_string", [False, True], ids=["object", "json-string"])
async def test_a_lone_surrogate_in_arguments_becomes_a_replacement_character(
    h: Harness, as_string: bool
) -> None:
    arguments = '{"query": "vpn \\ud800", "\\udc80": "x"}'
    answer(h, call(as_json_string(arguments) if as_string else arguments), '""')
    h.ollama.reply("Nothing about the VPN yet.")
    await h.say("search the notes for the vpn")
    assert shown(h) == "Nothing about the VPN yet."
    # The key that was a lone surrogate is an unknown argument now, said as one.
    [error] = told(h)
    assert error.startswith("error: invalid arguments for memory_search: \ufffd: Extra inputs")
    function = echoed(h)[0]
    if not as_string:
        assert function["arguments"] == {"query": "vpn \ufffd", "\ufffd": "x"}
    await assert_next_turn_answered_by_the_model(h)


@pytest.mark.parametrize("as_string", [False, True], ids=["object", "json-string"])
async def test_a_tool_runs_on_arguments_made_valid(h: Harness, as_string: bool) -> None:
    arguments = '{"query": "vpn \\ud800"}'
    answer(h, call(as_json_string(arguments) if as_string else arguments), '""')
    h.ollama.reply("Nothing about the VPN yet.")
    await h.say("search the notes for the vpn")
    assert shown(h) == "Nothing about the VPN yet."
    assert told(h) == [NOTHING_FOUND]
    await assert_next_turn_answered_by_the_model(h)


async def test_a_lone_surrogate_in_a_tool_name_is_an_unknown_tool(h: Harness) -> None:
    answer(h, call('{"query": "vpn"}', name='"memory_search\\ud800"'), '""')
    h.ollama.reply("There is no such tool; I will answer without it.")
    await h.say("search the notes for the vpn")
    assert shown(h) == "There is no such tool; I will answer without it."
    [error] = told(h)
    assert error.startswith("error: there is no tool named 'memory_search\ufffd'")
    assert echoed(h)[0]["name"] == "memory_search\ufffd"
    await assert_next_turn_answered_by_the_model(h)


async def test_lone_surrogates_in_content_and_thinking_are_posted_and_kept_valid(
    h: Harness,
) -> None:
    message = (
        '{"role": "assistant", "content": "", "thinking": "the vpn \\ud800 question"}'
        if streamed(h)
        else '{"role": "assistant", "content": "The VPN is \\udc80 down \\ud83d\\ude00", '
        '"thinking": "the vpn \\ud800 question"}'
    )
    answer(h, message, '"The VPN "', '"is \\udc80"', '" down \\ud83d\\ude00"')
    await h.say("is the vpn up?")
    reply = "> 💭 thinking\n> the vpn \ufffd question\n\nThe VPN is \ufffd down 😀"
    assert shown(h) == reply
    assert not any(OFFLINE_NOTICE in sent.current for sent in h.adapter.sent)
    assert await stored_replies(h) == [reply]
    if isinstance(h.adapter, StreamingAdapter):
        for _, text in h.adapter.streams[0].calls:
            text.encode()
    await assert_next_turn_answered_by_the_model(h)
    # The reply went back to the model with the history, as valid text.
    assert {"role": "assistant", "content": reply} in h.last_prompt()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_lone_surrogate_lorebot_sends_the_model_does_not_fail_the_call(
    fake_ollama: FakeOllama, stream: bool
) -> None:
    """A tool's output (an MCP server's, say) may hold one: it goes as its escape, which
    Ollama reads as U+FFFD, rather than failing the call."""
    model = Model(OllamaSettings(host=fake_ollama.url, timeout_s=2.0))
    pieces: list[str] = []

    async def on_content(piece: str) -> None:
        pieces.append(piece)

    try:
        fake_ollama.reply("Read it.")
        messages = [{"role": "tool", "tool_name": "fetch", "content": "out \udc80 put"}]
        result = await model.chat(messages, on_content=on_content if stream else None)
    finally:
        await model.close()
    assert result.content == "Read it."
    [request] = fake_ollama.chat_requests
    assert request["messages"] == messages  # the escape, read back
