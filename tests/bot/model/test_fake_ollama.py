"""The real ``ollama.AsyncClient`` (0.6.3) against ``FakeOllama``, over the wire: the shapes
of what lorebot sends and reads (chat, tool calls, thinking, show, tags, embed, errors) and
how the client reports an Ollama that is down, so the fake stays true to the real server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama
import pytest
import pytest_asyncio

from tests.fakes import ollama as fakes
from tests.fakes.ollama import FakeOllama, Recorded, embedding

# The fixture, bound by assignment: an imported name used as a test argument trips ruff's F811.
fake_ollama = fakes.fake_ollama

MODEL = "qwen3:8b"
HELLO = [{"role": "user", "content": "hello there"}]


@pytest_asyncio.fixture
async def client(fake_ollama: FakeOllama) -> AsyncIterator[ollama.AsyncClient]:
    """A real client pointed at the fake, closed after the test."""
    client = ollama.AsyncClient(host=fake_ollama.url)
    try:
        yield client
    finally:
        await close_client(client)


async def close_client(client: ollama.AsyncClient) -> None:
    """Close the client's httpx pool (``AsyncClient.close`` is untyped in ollama 0.6.3)."""
    await client._client.aclose()


async def collect(stream: AsyncIterator[ollama.ChatResponse]) -> list[ollama.ChatResponse]:
    return [chunk async for chunk in stream]


async def test_plain_chat_returns_the_default_reply_with_all_fields(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    response = await client.chat(model=MODEL, messages=HELLO)

    assert response.message.role == "assistant"
    assert response.message.content == "ok"
    assert response.message.thinking is None
    assert response.message.tool_calls is None
    assert response.model == MODEL
    assert response.done is True
    assert response.done_reason == "stop"
    assert response.created_at
    for name in ("total_duration", "load_duration", "prompt_eval_count"):
        assert isinstance(getattr(response, name), int)
    for name in ("prompt_eval_duration", "eval_count", "eval_duration"):
        assert isinstance(getattr(response, name), int)
    assert fake_ollama.requests == [
        Recorded("/api/chat", {"model": MODEL, "messages": HELLO, "tools": [], "stream": False})
    ]


async def test_tool_call_with_dict_arguments_is_parsed(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    fake_ollama.tool_call("search_notes", {"query": "vpn", "limit": 3})

    response = await client.chat(model=MODEL, messages=HELLO)

    calls = response.message.tool_calls
    assert calls is not None and len(calls) == 1
    assert calls[0].function.name == "search_notes"
    assert calls[0].function.arguments == {"query": "vpn", "limit": 3}
    assert response.message.content == ""


async def test_thinking_is_returned_in_message_thinking(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    fake_ollama.reply("42", thinking="The user wants the answer.")

    response = await client.chat(model=MODEL, messages=HELLO, think=True)

    assert response.message.thinking == "The user wants the answer."
    assert response.message.content == "42"
    assert fake_ollama.chat_requests[0]["think"] is True


async def test_show_returns_capabilities_and_context_length(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    fake_ollama.context_length = 40960

    shown = await client.show(MODEL)

    assert shown.capabilities == ["completion", "tools", "thinking"]
    assert shown.modelinfo is not None
    assert shown.modelinfo["qwen3.context_length"] == 40960
    assert shown.modelinfo["general.architecture"] == "qwen3"
    assert shown.details is not None and shown.details.family == "qwen3"
    assert shown.modelfile and shown.parameters and shown.template
    assert fake_ollama.requests_to("/api/show") == [{"model": MODEL}]


async def test_missing_model_is_a_404_response_error(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    with pytest.raises(ollama.ResponseError) as shown:
        await client.show("nope:1b")
    with pytest.raises(ollama.ResponseError) as chatted:
        await client.chat(model="qwen3", messages=HELLO)  # means qwen3:latest

    assert shown.value.status_code == 404
    assert shown.value.error == "model 'nope:1b' not found"
    assert chatted.value.status_code == 404
    assert chatted.value.error == "model 'qwen3' not found"


async def test_scripted_http_error_raises_response_error(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    fake_ollama.error(500, "llama runner process has terminated")
    fake_ollama.error(503, "busy")

    with pytest.raises(ollama.ResponseError) as first:
        await client.chat(model=MODEL, messages=HELLO)
    with pytest.raises(ollama.ResponseError) as second:
        await collect(await client.chat(model=MODEL, messages=HELLO, stream=True))

    assert (first.value.status_code, first.value.error) == (
        500,
        "llama runner process has terminated",
    )
    assert (second.value.status_code, second.value.error) == (503, "busy")
    assert (await client.chat(model=MODEL, messages=HELLO)).message.content == "ok"


async def test_down_refuses_connections_and_up_listens_on_the_same_port(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    """Connection refused: builtin ``ConnectionError``, or ``httpx.ConnectError`` streaming."""
    url = fake_ollama.url
    assert (await client.chat(model=MODEL, messages=HELLO)).message.content == "ok"

    await fake_ollama.down()
    assert not fake_ollama.is_up
    with pytest.raises(ConnectionError, match="Failed to connect to Ollama"):
        await client.chat(model=MODEL, messages=HELLO)  # its kept-alive connection is gone too
    stream = await client.chat(model=MODEL, messages=HELLO, stream=True)  # lazy: no I/O yet
    with pytest.raises(httpx.ConnectError) as streamed:
        await collect(stream)
    assert not isinstance(streamed.value, ConnectionError)
    with pytest.raises(ConnectionError):
        await client.show(MODEL)

    await fake_ollama.up()
    assert fake_ollama.url == url
    assert (await client.chat(model=MODEL, messages=HELLO)).message.content == "ok"
    assert len(fake_ollama.chat_requests) == 2


async def test_down_cuts_off_a_request_in_flight(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    fake_ollama.delay(10)
    pending = asyncio.create_task(client.chat(model=MODEL, messages=HELLO))
    await fake_ollama.wait_for_requests(1)

    await fake_ollama.down()

    with pytest.raises(httpx.TransportError) as raised:
        await pending
    assert not isinstance(raised.value, ConnectionError)


async def test_held_chats_are_recorded_and_answered_once_released(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    fake_ollama.reply("first")
    fake_ollama.hold_chats()
    pending = asyncio.create_task(client.chat(model=MODEL, messages=HELLO))
    await fake_ollama.wait_for_requests(1)
    assert not pending.done()

    fake_ollama.release_chats()

    assert (await pending).message.content == "first"
    assert (await client.chat(model=MODEL, messages=HELLO)).message.content == "ok"


async def test_recorded_request_carries_tools_format_think_and_options(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    tool: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": "search_notes",
            "description": "Search the team's notes.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to find."}},
                "required": ["query"],
            },
        },
    }
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    fake_ollama.reply('{"answer": "yes"}')
    history: list[dict[str, Any]] = [
        *HELLO,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "search_notes", "arguments": {"query": "vpn"}}}],
        },
        {"role": "tool", "tool_name": "search_notes", "content": "no notes"},
    ]

    await client.chat(
        model=MODEL,
        messages=history,
        tools=[tool],
        format=schema,
        think=False,
        options={"temperature": 0.2, "num_ctx": 8192},
    )

    [body] = fake_ollama.chat_requests
    assert body["model"] == MODEL
    assert body["format"] == schema
    assert body["think"] is False
    assert body["options"] == {"temperature": 0.2, "num_ctx": 8192}
    assert body["stream"] is False
    assert body["tools"][0]["function"]["name"] == "search_notes"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["query"]
    assert body["messages"][-1] == {
        "role": "tool",
        "tool_name": "search_notes",
        "content": "no notes",
    }
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"query": "vpn"}


async def test_tags_and_embed(fake_ollama: FakeOllama, client: ollama.AsyncClient) -> None:
    fake_ollama.models = ["qwen3:8b", "nomic-embed-text"]
    fake_ollama.embedding_dim = 4

    listed = await client.list()
    one = await client.embed(model="nomic-embed-text", input="hello")
    many = await client.embed(model="nomic-embed-text:latest", input=["hello", "world"])

    assert [m.model for m in listed.models] == ["qwen3:8b", "nomic-embed-text:latest"]
    assert one.embeddings == [embedding("hello", 4)]
    assert many.embeddings == [embedding("hello", 4), embedding("world", 4)]
    assert many.embeddings[0] != many.embeddings[1]
    assert all(len(v) == 4 for v in many.embeddings)
    assert abs(sum(x * x for x in one.embeddings[0]) - 1) < 1e-9
    with pytest.raises(ollama.ResponseError) as missing:
        await client.embed(model="all-minilm", input="x")
    assert missing.value.status_code == 404
