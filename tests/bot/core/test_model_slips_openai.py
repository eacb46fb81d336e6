"""A small model's slips through the OpenAI-compatible backend, against the real llama.cpp
server and SmolLM2-135M. Under llama.cpp's function-calling chat format the tiny model
never answered empty in 75 benchmark turns (its own failure there is a call it never
finishes, which lorebot answers from memory as unreadable), so its empty answer is the
server's own: streamed for lorebot's request under a grammar that allows nothing, recorded,
and replayed for the requests that offered tools. The shapes it does not produce on demand
(an action announced, the same call twice, a tool that does not exist) are scripted in the
server's stream format. What comes after them is the real model's."""

from __future__ import annotations

from pathlib import Path

from bot.core.fallback import EMPTY_NOTICE
from bot.core.slips import EMPTY_NUDGE, INTENT_NUDGE, REPEATED_NOTE
from memory import NoteDraft, Scope
from tests.fakes.adapter import StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.llama import (
    LlamaServer,
    Proxy,
    openai_sections,
    proxy_to,
    record_stream,
    scripted_stream,
)
from tests.support.slips import slips


async def start(tmp_path: Path, fake: FakeOllama, clock: FakeClock, proxy: Proxy) -> Harness:
    return await start_harness(
        tmp_path, fake, clock, adapter=StreamingAdapter(), **openai_sections(proxy.url)
    )


def turns(proxy: Proxy) -> list[list[dict[str, object]]]:
    return [r["messages"] for r in proxy.requests if "messages" in r and "tools" in r]


def shown_as_posted(h: Harness, since: int, reply: str) -> bool:
    """Whether the posts made since the `since`-th show `reply`: a long answer of the
    real model is posted in several messages (split at breaks, whitespace dropped)."""
    posted = " ".join(sent.current for sent in h.adapter.sent[since:])
    return posted.split() == reply.split()


async def stored_reply(h: Harness) -> str:
    entries = (await h.bot.log.fetch_history("test/C1/")).entries
    return [e.content for e in entries if e.role == "assistant"][-1]


async def record_empty_answer(server: LlamaServer, proxy: Proxy) -> bytes:
    """The real server's streamed answer with nothing in it, to lorebot's last request."""
    sent = [r for r in proxy.requests if "messages" in r][-1]
    plain = {key: value for key, value in sent.items() if key != "tools"}
    return await record_stream(server, {**plain, "grammar": 'root ::= ""'})


async def test_the_real_servers_empty_answer_twice_gets_the_answer_from_memory(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    async with proxy_to(llama_chat) as proxy:
        h = await start(tmp_path, fake_ollama, clock, proxy)
        try:
            note = NoteDraft(Scope.parse("channel:test/C1"), "staging-db", "pg-stage-2:5432")
            await h.bot.notes.save(note, actor="t")
            await h.say("hello")
            empty = await record_empty_answer(llama_chat, proxy)
            assert b'"content"' not in empty  # no words: the stream had none to send
            before = slips("empty"), slips("empty twice")
            proxy.replay += [empty, empty]
            asked = len(turns(proxy))
            await h.say("where is the staging database?")
            first, nudged = turns(proxy)[asked:]
            assert nudged[-1] == {"role": "user", "content": EMPTY_NUDGE}
            reply = await stored_reply(h)
            assert reply.startswith(EMPTY_NOTICE) and "`staging-db`: pg-stage-2:5432" in reply
            assert h.adapter.sent[-1].current == reply and "(no answer)" not in reply
            assert (slips("empty"), slips("empty twice")) == (before[0] + 1, before[1] + 1)
        finally:
            await h.bot.stop()


async def test_after_one_empty_answer_the_real_model_answers_the_nudge(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    async with proxy_to(llama_chat) as proxy:
        h = await start(tmp_path, fake_ollama, clock, proxy)
        try:
            await h.say("hello")
            proxy.replay.append(await record_empty_answer(llama_chat, proxy))
            posted = len(h.adapter.sent)
            await h.say("where is the staging database?")
            assert turns(proxy)[-1][-1] == {"role": "user", "content": EMPTY_NUDGE}
            reply = await stored_reply(h)
            assert reply.strip() and shown_as_posted(h, posted, reply)
            assert not reply.startswith(EMPTY_NOTICE)
        finally:
            await h.bot.stop()


async def test_an_announced_action_is_nudged_and_the_real_models_next_answer_posted(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    async with proxy_to(llama_chat) as proxy:
        h = await start(tmp_path, fake_ollama, clock, proxy)
        try:
            before = slips("intent")
            proxy.replay.append(scripted_stream("Sure. Let me search my notes for that."))
            posted = len(h.adapter.sent)
            await h.say("where is the staging database?")
            _, nudged = turns(proxy)
            nudge = INTENT_NUDGE.format(intent="Let me search my notes for that")
            assert nudged[-2:] == [
                {"role": "assistant", "content": "Sure. Let me search my notes for that."},
                {"role": "user", "content": nudge},
            ]
            reply = await stored_reply(h)
            assert reply.strip() and shown_as_posted(h, posted, reply)
            assert slips("intent") == before + 1
        finally:
            await h.bot.stop()


async def test_the_same_call_twice_runs_once_and_the_real_model_gets_the_earlier_result(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    async with proxy_to(llama_chat) as proxy:
        h = await start(tmp_path, fake_ollama, clock, proxy)
        try:
            search = ("memory_search", {"query": "staging database"})
            proxy.replay.append(scripted_stream(calls=[search, search]))
            await h.say("where is the staging database?")
            after = turns(proxy)[-1]
            first, second = [m for m in after if m["role"] == "tool"]
            assert second["content"] == REPEATED_NOTE.format(
                name="memory_search", result=first["content"]
            )
            calls = [m for m in after if m.get("tool_calls")][-1]["tool_calls"]
            assert [first["tool_call_id"], second["tool_call_id"]] == [c["id"] for c in calls]
            assert (await stored_reply(h)).strip()
        finally:
            await h.bot.stop()


async def test_the_same_unknown_tool_twice_ends_the_turn_without_asking_the_model_again(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, llama_chat: LlamaServer
) -> None:
    async with proxy_to(llama_chat) as proxy:
        h = await start(tmp_path, fake_ollama, clock, proxy)
        try:
            proxy.replay += [scripted_stream(calls=[("check_db", {})])] * 2
            await h.say("is the staging database up?")
            assert len(turns(proxy)) == 2  # no third request after the same mistake
            told = [m["content"] for m in turns(proxy)[-1] if m["role"] == "tool"]
            assert told == [told[0]] and told[0].startswith("error: there is no tool named")
            reply = await stored_reply(h)
            assert reply.startswith("⚠️ I could not finish this answer: my model made the same")
            assert h.adapter.sent[-1].current == reply
        finally:
            await h.bot.stop()
