"""The OpenAI shapes at the edge, as the server's JSON: tool calls keep their ids across a
turn, streamed pieces join into one call (also from servers that repeat a call's name in
every piece), token vectors are pooled, and failures read as lorebot's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from bot.config.settings import Settings
from bot.model.client import parse_chat_reply
from bot.model.ollama import IncompleteStream
from bot.model.openai_compat import CONTEXT_FIX, unavailable
from bot.model.openai_shapes import (
    StreamedCompletion,
    completion_request,
    ollama_body,
    openai_messages,
)
from bot.model.quick_embed import pooled

URL = "http://127.0.0.1:8000/v1"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def call_piece(arguments: str, name: str | None = "memory_search") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    return {"tool_calls": [{"index": 0, "id": "x", "type": "function", "function": function}]}


def test_a_turns_tool_results_answer_the_calls_they_follow_by_id() -> None:
    messages = [
        {"role": "user", "content": "find the proxy"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": "memory_search", "arguments": {"query": "proxy"}}},
                {"function": {"name": "memory_read", "arguments": {"topic": "edge-proxy"}}},
            ],
        },
        {"role": "tool", "tool_name": "memory_search", "content": "1 note"},
        {"role": "tool", "tool_name": "memory_read", "content": "edge-proxy: host-7"},
    ]
    converted = openai_messages(messages)
    calls = converted[1]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == [
        '{"query": "proxy"}',
        '{"topic": "edge-proxy"}',
    ]
    assert [m["tool_call_id"] for m in converted[2:]] == [c["id"] for c in calls]
    assert len({c["id"] for c in calls}) == 2 and converted[1]["content"] == ""


def test_streamed_pieces_join_into_one_call_even_when_the_name_comes_in_every_piece() -> None:
    for names in (["memory_search", None, None], ["memory_search"] * 3):  # OpenAI; llama.cpp
        reply = StreamedCompletion()
        for piece, name in zip(['{"que', 'ry": "pro', 'xy"}'], names, strict=True):
            reply.add(chunk(call_piece(piece, name)))
        reply.add(chunk({}, finish="tool_calls"))
        result = parse_chat_reply(reply.body())
        [call] = result.tool_calls
        assert (call.name, call.arguments, call.problem) == (
            "memory_search",
            {"query": "proxy"},
            "",
        )


def test_arguments_that_are_not_json_reach_the_agent_as_a_problem_to_correct() -> None:
    reply = StreamedCompletion()
    reply.add(chunk(call_piece('{"query": "pro')))
    reply.add(chunk({}, finish="tool_calls"))
    [call] = parse_chat_reply(reply.body()).tool_calls
    assert call.arguments == '{"query": "pro'  # the agent answers: arguments must be an object


def test_reasoning_sent_apart_from_the_answer_is_kept_as_thinking() -> None:
    reply = StreamedCompletion()
    reply.add(chunk({"reasoning_content": "the user wants the port"}))
    assert reply.add(chunk({"content": "5432"})) == "5432"
    reply.add(chunk({}, finish="stop"))
    result = parse_chat_reply(reply.body())
    assert (result.content, result.thinking) == ("5432", "the user wants the port")
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "5432", "reasoning_content": "port"},
            }
        ],
    }
    assert parse_chat_reply(ollama_body(completion)).thinking == "port"


def test_a_stream_that_ends_before_its_finish_reason_is_cut_short() -> None:
    reply = StreamedCompletion()
    reply.add(chunk({"content": "The deploy window is"}))
    with pytest.raises(IncompleteStream):
        reply.body()


def test_a_json_schema_goes_as_the_apis_response_format_or_llama_cpps() -> None:
    request = {"model": "m", "messages": [], "format": {"type": "object"}}
    assert completion_request(request)["response_format"]["type"] == "json_schema"
    styled = completion_request(request, schema_style="json_object")["response_format"]
    assert styled == {"type": "json_object", "schema": {"type": "object"}}


def test_token_vectors_are_pooled_into_one_and_sentence_vectors_kept() -> None:
    assert pooled([[1.0, 3.0], [3.0, 5.0]]) == [2.0, 4.0]
    assert pooled([0.5, 0.25]) == [0.5, 0.25]
    with pytest.raises(TypeError):
        pooled([[1.0], [1.0, 2.0]])


def status_error(status: int, message: str) -> openai.APIStatusError:
    response = httpx.Response(status, request=httpx.Request("POST", f"{URL}/chat/completions"))
    body = {"error": {"message": message}}
    return openai.APIStatusError(message, response=response, body=body)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "message", "kind", "fix"),
    [
        (404, "model not found", "missing", "openai.model"),
        (401, "bad key", "refused", "openai.api_key"),
        (400, "This model's maximum context length is 256 tokens", "too_long", CONTEXT_FIX),
        (400, "unknown field", "refused", ""),
        (503, "overloaded", "failing", ""),
    ],
)
def test_each_failure_of_the_server_reads_as_one_of_lorebots(
    status: int, message: str, kind: str, fix: str
) -> None:
    problem = unavailable(status_error(status, message), url=URL, model="m", within=5.0)
    assert problem.kind == kind and fix in problem.fix


def test_openai_variables_are_honoured_when_lorebot_has_none(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9000/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    settings = Settings(model={"backend": "openai"}, openai={"model": "m"})
    assert settings.model_server.url == "http://127.0.0.1:9000/v1"
    assert settings.openai.key() == "sk-test-0123456789"
    assert "sk-test-0123456789" in settings.secrets()  # scrubbed from logs like any secret
    monkeypatch.setenv("LOREBOT_OPENAI__BASE_URL", "http://127.0.0.1:9100/v1")
    assert Settings(model={"backend": "openai"}, openai={"model": "m"}).openai.url.endswith(
        "9100/v1"
    )


def test_the_openai_backend_without_a_model_says_what_to_set(env: Path) -> None:
    with pytest.raises(ValueError, match="openai.model is not set"):
        Settings(model={"backend": "openai"})
