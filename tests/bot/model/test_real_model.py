"""lorebot on a real model: SmolLM2-135M under llama.cpp's OpenAI-compatible server
(`model.backend = "openai"`), through the real core, the `openai` client and the real
server. A recording proxy in front of the server shows what lorebot sent; where the tiny
model will not produce a shape on its own (a tool call), the server's own answer to a
forced request is recorded in the test and replayed. These tests check the plumbing, never
the quality of an answer."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.base import APPROVE
from bot.cli.main import main
from bot.config.model_sections import OpenAISettings
from bot.core.fallback import OFFLINE_NOTICE, TOO_LONG_NOTICE
from bot.model.client import Model
from bot.model.openai_compat import CONTEXT_FIX
from bot.model.structured import ask_structured
from tests.fakes.adapter import StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.llama import (
    MODEL,
    LlamaServer,
    Proxy,
    openai_sections,
    proxy_to,
    record_stream,
    running,
)
from tests.support.paths import ROOT

HISTORY = "test/C1/"


async def streaming(
    tmp_path: Path, fake: FakeOllama, clock: FakeClock, url: str, **openai: Any
) -> tuple[Harness, StreamingAdapter]:
    adapter = StreamingAdapter()
    h = await start_harness(
        tmp_path, fake, clock, adapter=adapter, **openai_sections(url, **openai)
    )
    return h, adapter


async def stored_reply(h: Harness) -> str:
    entries = (await h.bot.log.fetch_history(HISTORY)).entries
    return [e.content for e in entries if e.role == "assistant"][-1]


def chat_requests(proxy: Proxy) -> list[dict[str, Any]]:
    return [r for r in proxy.requests if "messages" in r]


# --- a turn ---------------------------------------------------------------------------------


async def test_a_turn_streams_the_real_models_answer_with_the_tools_and_keeps_what_it_showed(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    async with proxy_to(llama_chat) as proxy:
        h, adapter = await streaming(tmp_path, fake_ollama, clock, proxy.url)
        try:
            await h.say("where is the staging database?")
            [request] = chat_requests(proxy)
            assert request["stream"] is True and request["model"] == MODEL
            offered = {tool["function"]["name"] for tool in request["tools"]}
            assert {"memory_search", "memory_read", "propose_note"} <= offered
            assert all(tool["type"] == "function" for tool in request["tools"])
            growing = [text for op, text in adapter.streams[0].calls if op == "show"]
            assert len(growing) >= 2  # pieces as the model wrote them, not one post
            pairs = zip(growing, growing[1:], strict=False)
            assert all(later.startswith(earlier) for earlier, later in pairs)
            stored = await stored_reply(h)
            assert adapter.sent[0].current == stored and stored.strip()
            assert not stored.startswith(OFFLINE_NOTICE)
        finally:
            await h.bot.stop()


async def test_a_tool_call_of_the_real_server_runs_the_tool_and_answers_it_by_its_id(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    """The 135M model calls a tool only when forced: the server's streamed answer to the
    request lorebot sends, with `memory_search` forced, is recorded and given back to
    lorebot as the server's answer to its next turn."""
    async with proxy_to(llama_chat) as proxy:
        h, _ = await streaming(tmp_path, fake_ollama, clock, proxy.url)
        try:
            await h.say("where is the staging database?")
            sent = chat_requests(proxy)[0]
            forced = {"type": "function", "function": {"name": "memory_search"}}
            proxy.replay.append(await record_stream(llama_chat, {**sent, "tool_choice": forced}))
            await h.say("search your notes for the staging database")
            *_, after_tool = chat_requests(proxy)
            assistant = [m for m in after_tool["messages"] if m.get("tool_calls")][-1]
            [call] = assistant["tool_calls"]
            assert call["function"]["name"] == "memory_search"
            [answer] = [m for m in after_tool["messages"] if m["role"] == "tool"]
            assert answer["tool_call_id"] == call["id"]  # the result names the call it answers
            # The tool's output, or lorebot's word on arguments the tiny model got wrong.
            assert answer["content"].strip()
        finally:
            await h.bot.stop()


# --- faults ---------------------------------------------------------------------------------


async def test_a_prompt_longer_than_the_servers_context_gets_a_clear_answer_and_a_log_line(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    with running(LlamaServer(n_ctx=256), tmp_path) as small:
        h, adapter = await streaming(tmp_path, fake_ollama, clock, small.base_url)
        try:
            with caplog.at_level(logging.WARNING, logger="bot.core.agent"):
                await h.say("where is the staging database? " + "please answer fully. " * 40)
            reply = await stored_reply(h)
            assert reply.startswith(TOO_LONG_NOTICE) and adapter.sent[-1].current == reply
            [line] = [r.getMessage() for r in caplog.records if r.name == "bot.core.agent"]
            assert "openai.context_tokens" in line and CONTEXT_FIX in line
        finally:
            await h.bot.stop()


async def test_the_server_killed_mid_answer_leaves_the_offline_answer_not_half_a_reply(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    with running(LlamaServer(), tmp_path) as doomed:
        async with proxy_to(doomed) as proxy:
            proxy.on_chunk = lambda number: doomed.kill() if number == 3 else None
            h, adapter = await streaming(tmp_path, fake_ollama, clock, proxy.url)
            try:
                await h.say("where is the staging database?")
                final = adapter.sent[0].current
                assert final.startswith(OFFLINE_NOTICE) and final == await stored_reply(h)
                assert h.bot.model.reachable is False  # and the model backs off
            finally:
                await h.bot.stop()


# --- doctor and embeddings ------------------------------------------------------------------


def openai_env(monkeypatch: pytest.MonkeyPatch, url: str, **values: str) -> None:
    """Point the command line at the server, for this test only."""
    for name, value in {
        "LOREBOT_MODEL__BACKEND": "openai",
        "LOREBOT_OPENAI__BASE_URL": url,
        "LOREBOT_OPENAI__MODEL": MODEL,
        **values,
    }.items():
        monkeypatch.setenv(name, value)


async def doctor(capsys: pytest.CaptureFixture[str]) -> str:
    await asyncio.to_thread(main, ["doctor"])
    return capsys.readouterr().out


async def test_doctor_finds_the_real_model_and_says_its_context(
    env: Path,
    llama_chat: LlamaServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openai_env(monkeypatch, llama_chat.base_url)
    assert f"✓ model: {MODEL} at {llama_chat.base_url}, context 8192 tokens" in await doctor(capsys)
    monkeypatch.setenv("LOREBOT_OPENAI__CONTEXT_TOKENS", "2048")  # the server does not say it
    assert "context 2048 tokens" in await doctor(capsys)


async def test_doctor_names_what_the_server_serves_when_the_model_is_not_there(
    env: Path,
    llama_chat: LlamaServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openai_env(monkeypatch, llama_chat.base_url, LOREBOT_OPENAI__MODEL="qwen3-8b")
    out = await doctor(capsys)
    assert f"✗ model: qwen3-8b is not served at {llama_chat.base_url} (it serves: {MODEL})" in out
    assert "openai.model" in out


def lorebot(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *argv],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_the_real_servers_embeddings_feed_reembed_and_a_search_by_meaning(
    env: Path, llama_embed: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_env(monkeypatch, llama_embed.base_url, LOREBOT_OPENAI__EMBED_MODEL=MODEL)
    scope = "channel:slack/C1"
    for topic, summary in (
        ("staging-db", "the staging database is db-2 on port 5432"),
        ("lunch", "lunch is at noon on Fridays"),
    ):
        added = await asyncio.to_thread(lorebot, "notes", "add", scope, topic, summary)
        assert added.returncode == 0, added.stderr
    done = await asyncio.to_thread(lorebot, "notes", "reembed")
    assert done.returncode == 0, done.stderr
    assert f"now use {MODEL} (576 dimensions)" in done.stdout  # SmolLM2-135M: 576 wide
    found = await asyncio.to_thread(
        lorebot, "notes", "search", "staging database port", "--scope", scope
    )
    assert found.returncode == 0, found.stderr
    assert "staging-db" in found.stdout
    assert "words alone" not in found.stderr  # the query had a vector from the server


# --- structured output (the jobs' way of asking) ---------------------------------------------


class Reflection(BaseModel):
    summary: str


async def test_a_structured_answer_of_the_real_server_fits_its_schema(
    llama_chat: LlamaServer,
) -> None:
    """The API's `json_schema` response format is refused by llama.cpp's server, which takes
    `json_object` with a schema: lorebot asks again so, and the answer fits."""
    # The timeout only stops a hang: a busy 2-core machine runs this model at ~4 tokens/s.
    model = Model(OpenAISettings(base_url=llama_chat.base_url, model=MODEL, timeout_s=600.0))
    try:
        found = await ask_structured(model, "Summarise: deploys run on Tuesdays.", Reflection)
        assert isinstance(found.summary, str)
    finally:
        await model.close()


# --- a card, decided, and the turn resumed on the real model ----------------------------------


def with_arguments(recorded: bytes, arguments: dict[str, Any]) -> bytes:
    """A recorded stream of the server's with the tool call's arguments replaced: the first
    piece carries them whole, the others nothing; ids, names and framing stay the server's."""
    out, first = [], True
    for line in recorded.decode().split("\n"):
        if line.startswith("data: {"):
            chunk = json.loads(line.removeprefix("data: "))
            for choice in chunk.get("choices", []):
                for call in (choice.get("delta") or {}).get("tool_calls") or []:
                    call["function"]["arguments"] = json.dumps(arguments) if first else ""
                    first = False
                choice.get("delta", {}).pop("function_call", None)
            line = "data: " + json.dumps(chunk)
        out.append(line)
    return "\n".join(out).encode()


async def test_a_card_the_real_server_asked_for_is_approved_and_the_turn_resumes_on_it(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    """The server's own streamed `load_skill` call (forced, since the tiny model calls no
    tool unasked), with a bundled skill's name put in, asks for the card; the turn waits
    for it and goes on on the real model after the ✅."""
    async with proxy_to(llama_chat) as proxy:
        h, adapter = await streaming(tmp_path, fake_ollama, clock, proxy.url)
        try:
            await h.say("where is the staging database?")
            sent = chat_requests(proxy)[0]
            forced = {"type": "function", "function": {"name": "load_skill"}}
            recorded = await record_stream(llama_chat, {**sent, "tool_choice": forced})
            proxy.replay.append(with_arguments(recorded, {"name": "remembering"}))
            await h.say("load the remembering skill please")
            [card] = adapter.cards
            assert "remembering" in card.current
            asked = len(chat_requests(proxy))
            await h.react(card, APPROVE)
            resumed = chat_requests(proxy)[asked:]
            assert resumed, "the turn went on on the real model after the ✅"
            messages = resumed[0]["messages"]
            [call] = [m for m in messages if m.get("tool_calls")][-1]["tool_calls"]
            [result] = [m for m in messages if m["role"] == "tool"]
            assert call["function"]["name"] == "load_skill"
            assert result["tool_call_id"] == call["id"] and result["content"].strip()
            assert (await stored_reply(h)).strip()  # the resumed turn's answer was kept
        finally:
            await h.bot.stop()


async def test_a_long_conversation_is_compacted_by_the_real_model_and_goes_on(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    """With `openai.context_tokens` at its least, the history passes 80% of it in a turn:
    the real model writes the summary, and the next prompt carries it instead."""
    async with proxy_to(llama_chat) as proxy:
        h, _ = await streaming(tmp_path, fake_ollama, clock, proxy.url, context_tokens=256)
        try:
            for question in (
                "where is the staging database?",
                "which port does it use?",
                "who looks after it?",
                "when are its backups?",
                "and the edge proxy?",
            ):
                await h.say(question)
            asked = [
                r
                for r in chat_requests(proxy)
                if r["messages"][0]["content"].startswith("Summarise this conversation")
            ]
            assert asked and "tools" not in asked[0]  # the real model was asked for it
            assert (await h.bot.log.fetch_history(HISTORY)).summary.strip()
            last = chat_requests(proxy)[-1]["messages"]
            assert any(m["content"].startswith("Earlier in this conversation:") for m in last)
        finally:
            await h.bot.stop()
