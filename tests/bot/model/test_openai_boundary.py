"""What an OpenAI-compatible server sends is read as untrusted data. A hostile fake server
on 127.0.0.1 answers the real `openai` client, streamed and not, with shapes real servers
and proxies send (a call's arguments as a JSON object, an index on a call's first piece
only) and with malformed ones. The first are real tool calls; any other shape is an
unreadable answer, so the turn answers from memory with the could-not-be-read notice and
counts a slip, never the generic apology. A key the server quotes back is not repeated."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.core.fallback import UNREADABLE_NOTICE
from bot.model.client import ModelUnavailable, ToolCall, parse_chat_reply
from bot.model.openai_compat import OpenAIClient, OpenAIEmbedder
from bot.model.quick_embed import QuickEmbedder
from memory import NoteDraft, Scope
from memory.errors import EmbedderUnavailable
from tests.fakes.adapter import RecordingAdapter, StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.fakes.openai import FakeOpenAI, serving
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.slips import slips

QUESTION = [{"role": "user", "content": "where is the staging database?"}]
SEARCH = {"name": "memory_search", "arguments": '{"query": "staging database"}'}
KEY = "local-key-7f3a9b2c"  # no shape the credential patterns know


def completion(message: Any) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "qwen3",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
    }


def chunk(delta: Any, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "qwen3",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def answer(message: Any, *, streamed: bool) -> Any:
    """`message` as a whole completion, or streamed: as one chunk's delta, then a finish."""
    return [chunk(message), chunk({}, "stop")] if streamed else completion(message)


def call(function: Any, **more: Any) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": function, **more}


# Each: the message (streamed: the delta) as sent, and what lorebot says is wrong with it.
UNREADABLE: dict[str, tuple[Any, str]] = {
    "tool_calls an object": ({"tool_calls": call(SEARCH, index=0)}, "tool_calls is an object"),
    "a function name that is a number": (
        {"tool_calls": [call({"name": 7, "arguments": "{}"}, index=0)]},
        "a function name is a number, not text",
    ),
    "a function that is text": (
        {"tool_calls": [call("memory_search", index=0)]},
        "a call's function is text, not an object",
    ),
    "content that is a number": ({"content": 42}, "the content is a number, not text"),
    "the message as text": ("On pg-stage-2.", "is text, not an object"),
}
STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


def hostile(shape: str, *, streamed: bool) -> tuple[Any, str]:
    """What the server sends for `shape`, and what lorebot says is wrong with it."""
    if shape == "a body that is a list":
        return ([["On pg-stage-2."]] if streamed else ["On pg-stage-2."]), "is a list"
    if shape == "a body nested too deeply to decode":
        deep = '{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}"
        sent = f"data: {deep}\n\n" if streamed else deep
        kind = "text/event-stream" if streamed else "application/json"
        return web.Response(text=sent, content_type=kind), "nested too deeply"
    message, problem = UNREADABLE[shape]
    return answer(message, streamed=streamed), problem


SHAPES = pytest.mark.parametrize(
    "shape", [*UNREADABLE, "a body that is a list", "a body nested too deeply to decode"]
)


@contextlib.asynccontextmanager
async def client(fake: FakeOpenAI, api_key: str | None = None) -> AsyncIterator[OpenAIClient]:
    async with OpenAIClient(fake.url, api_key=api_key, timeout_s=30.0, probe_timeout_s=30.0) as c:
        yield c


async def ask(c: OpenAIClient, *, streamed: bool) -> Any:
    """One chat call's body, streamed or not, as the model client gets it."""
    request = {"model": "qwen3", "messages": QUESTION}

    async def ignore(piece: str) -> None:
        pass

    return await (c.stream_chat(request, ignore) if streamed else c.fetch_chat(request))


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with serving(FakeOpenAI()) as started:
        yield started


# --- the client: shapes real servers send, and malformed ones --------------------------------


@STREAMED
async def test_arguments_sent_as_a_json_object_are_taken_as_that_object(
    fake: FakeOpenAI, streamed: bool
) -> None:
    as_object = {"name": "memory_search", "arguments": {"query": "staging database"}}
    fake.answers.append(answer({"tool_calls": [call(as_object, index=0)]}, streamed=streamed))
    async with client(fake) as c:
        result = parse_chat_reply(await ask(c, streamed=streamed))
    assert result.tool_calls == (ToolCall("memory_search", {"query": "staging database"}),)


async def test_pieces_without_an_index_belong_to_the_latest_call_unless_they_name_another(
    fake: FakeOpenAI,
) -> None:
    first = call({"name": "memory_search", "arguments": '{"query": '}, index=0)
    fake.answers.append(
        [
            chunk({"tool_calls": [first]}),
            chunk({"tool_calls": [{"function": {"arguments": '"staging"}'}}]}),  # no index
            # Whole calls without an index, each with its own id (as Ollama's /v1 sends them).
            chunk(
                {
                    "tool_calls": [
                        {
                            "id": "call_2",
                            "function": {"name": "memory_read", "arguments": {"topic": "a"}},
                        },
                        {
                            "id": "call_3",
                            "function": {"name": "memory_read", "arguments": {"topic": "b"}},
                        },
                    ]
                }
            ),
            chunk({}, "tool_calls"),
        ]
    )
    async with client(fake) as c:
        result = parse_chat_reply(await ask(c, streamed=True))
    assert result.tool_calls == (
        ToolCall("memory_search", {"query": "staging"}),
        ToolCall("memory_read", {"topic": "a"}),
        ToolCall("memory_read", {"topic": "b"}),
    )


async def test_a_completion_sent_without_a_json_content_type_is_read_as_json(
    fake: FakeOpenAI,
) -> None:
    body = json.dumps(completion({"content": "On pg-stage-2."}))
    fake.answers.append(web.Response(text=body, content_type="text/plain"))
    async with client(fake) as c:
        assert parse_chat_reply(await ask(c, streamed=False)).content == "On pg-stage-2."


@SHAPES
@STREAMED
async def test_an_answer_of_any_other_shape_is_unreadable(
    fake: FakeOpenAI, shape: str, streamed: bool
) -> None:
    sent, problem = hostile(shape, streamed=streamed)
    fake.answers.append(sent)
    async with client(fake) as c:
        with pytest.raises(ModelUnavailable) as failed:
            await ask(c, streamed=streamed)
    assert failed.value.kind == "unreadable"
    assert str(failed.value).startswith("qwen3 sent ") and problem in str(failed.value)


@pytest.mark.parametrize(
    "listing", [["qwen3"], {"data": "qwen3"}, {"data": ["qwen3"]}, {"data": [{"id": 3}]}]
)
async def test_a_model_list_of_another_shape_is_unreadable(fake: FakeOpenAI, listing: Any) -> None:
    fake.listing = listing
    async with client(fake) as c:
        with pytest.raises(ModelUnavailable) as failed:
            await c.fetch_model_info("qwen3")
    assert failed.value.kind == "unreadable"


@pytest.mark.parametrize(
    "embeddings",
    [["x"], {"data": "x"}, {"data": [{"index": 0}]}, {"data": [{"index": 0, "embedding": "x"}]}],
)
async def test_embeddings_of_another_shape_are_unreadable(
    fake: FakeOpenAI, embeddings: Any
) -> None:
    fake.embeddings = embeddings
    async with client(fake) as c:
        with pytest.raises(ModelUnavailable) as failed:
            await c.fetch_embeddings("embed", ["staging"])
    assert failed.value.kind == "unreadable"
    embedder = OpenAIEmbedder(fake.url, "embed", api_key=None, timeout_s=30.0, probe_timeout_s=30.0)
    try:
        with pytest.raises(EmbedderUnavailable):  # recall falls back to words alone
            await embedder.embed(["staging"])
    finally:
        await embedder.aclose()


# --- a whole turn ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def turns(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, fake: FakeOpenAI, streamed: bool
) -> AsyncIterator[Harness]:
    """The real bot with the OpenAI backend at `fake`, streaming its replies or not, with
    a note on the staging database."""
    adapter = StreamingAdapter() if streamed else RecordingAdapter()
    sections = {
        "model": {"backend": "openai"},
        "openai": {"base_url": fake.url, "model": "qwen3", "timeout_s": 30.0},
    }
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter, **sections)
    try:
        note = NoteDraft(Scope.parse("channel:test/C1"), "staging-db", "pg-stage-2:5432")
        await h.bot.notes.save(note, actor="t")
        yield h
    finally:
        await h.bot.stop()


def shown(h: Harness) -> list[str]:
    """The replies as they read now (a streamed one is edited as it grows)."""
    return [sent.current for sent in h.adapter.sent]


@SHAPES
@STREAMED
async def test_a_turn_given_an_unreadable_answer_answers_from_memory_and_counts_a_slip(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    fake: FakeOpenAI,
    shape: str,
    streamed: bool,
) -> None:
    async with turns(tmp_path, fake_ollama, clock, fake, streamed) as h:
        before = slips("unreadable")
        fake.answers.append(hostile(shape, streamed=streamed)[0])
        await h.say("where is the staging database?")
        [asked] = [body for path, body in fake.requests if path.endswith("/chat/completions")]
        assert bool(asked.get("stream")) is streamed
        [reply] = shown(h)
        assert reply.startswith(UNREADABLE_NOTICE) and "`staging-db`: pg-stage-2:5432" in reply
        assert slips("unreadable") == before + 1
        fake.answer = "Back to normal."  # one bad answer: the model is asked again at once
        await h.say("and now?")
        assert shown(h) == [reply, "Back to normal."]


@STREAMED
async def test_arguments_sent_as_a_json_object_run_the_tool_in_a_turn(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, fake: FakeOpenAI, streamed: bool
) -> None:
    async with turns(tmp_path, fake_ollama, clock, fake, streamed) as h:
        as_object = {"name": "memory_search", "arguments": {"query": "staging database"}}
        fake.answers.append(answer({"tool_calls": [call(as_object, index=0)]}, streamed=streamed))
        fake.answer = "It is on pg-stage-2."
        await h.say("where is the staging database?")
        assert shown(h) == ["It is on pg-stage-2."]
        *_, last = [body for path, body in fake.requests if path.endswith("/chat/completions")]
        [result] = [m["content"] for m in last["messages"] if m["role"] == "tool"]
        assert "staging-db" in result  # the search ran with the arguments given


# --- a key the server quotes back --------------------------------------------------------------


async def test_a_key_the_server_quotes_back_is_redacted_from_what_it_said(
    fake: FakeOpenAI,
) -> None:
    fake.key = "the-right-key"
    async with client(fake, api_key=KEY) as c:
        for failing in (lambda: c.fetch_model_info("qwen3"), lambda: ask(c, streamed=True)):
            with pytest.raises(ModelUnavailable) as refused:
                await failing()
            assert refused.value.kind == "refused"
            assert "Incorrect API key provided: [REDACTED]." in str(refused.value)
            assert KEY not in str(refused.value)
    quick = QuickEmbedder(fake.url, "embed", timeout_s=30.0, backend="openai", api_key=KEY)
    with pytest.raises(EmbedderUnavailable) as unavailable:
        await quick.embed(["staging"])
    assert "Incorrect API key provided" in str(unavailable.value)
    assert KEY not in str(unavailable.value)
