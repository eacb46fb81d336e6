"""The daemon with an embedding model: notes embedded in the background, recall by meaning,
and memory_search over past messages of the conversation only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import NoteDraft, Scope
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

CHANNEL = Scope.parse("channel:test/C1")
DIM = 8


def unit(axis: int) -> list[float]:
    return [1.0 if i == axis else 0.0 for i in range(DIM)]


@pytest.fixture
async def harness(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Harness]:
    fake_ollama.models = ["qwen3:8b", "nomic-embed-text"]
    fake_ollama.embedding_dim = DIM
    h = await start_harness(
        tmp_path, fake_ollama, clock, ollama={"embed_model": "nomic-embed-text"}
    )
    try:
        yield h
    finally:
        await h.bot.stop()


async def embedded(h: Harness) -> None:
    """Wait (at most 5 s) until the daemon's embedding task emptied the queue."""
    async with asyncio.timeout(5):
        while await h.bot.vectors.pending():  # noqa: ASYNC110 (a count in SQLite, no event)
            await asyncio.sleep(0.01)


async def test_a_note_saved_while_running_is_recalled_by_meaning(harness: Harness) -> None:
    harness.ollama.vectors_containing["postgres primary"] = unit(1)
    harness.ollama.vectors_containing["main database"] = unit(1)
    harness.ollama.vectors_containing["lunch"] = unit(5)
    await harness.bot.notes.save(
        NoteDraft(CHANNEL, "prod-db", "the postgres primary is db-prod-01"), actor="seed"
    )
    await harness.bot.notes.save(
        NoteDraft(CHANNEL, "lunch", "team lunch is on fridays"), actor="seed"
    )
    await embedded(harness)

    harness.ollama.reply("db-prod-01.")
    await harness.say("which box runs our main database?")  # no word in common

    question = harness.last_prompt()[-1]["content"]
    memories = question.split("<relevant-memories>")[1]
    assert memories.index("prod-db") < memories.index("lunch")


async def test_memory_search_finds_past_messages_of_this_channel_only(harness: Harness) -> None:
    harness.ollama.reply("Noted.")
    await harness.say("the gateway listens on port 8443 now")
    harness.ollama.reply("Noted.")
    await harness.say("the gateway listens on port 9000 here", channel="C2")
    await embedded(harness)

    harness.ollama.tool_call("memory_search", {"query": "gateway port"})
    harness.ollama.reply("8443.")
    await harness.say("which port was the gateway on?")

    [result] = [m["content"] for m in harness.last_prompt() if m["role"] == "tool"]
    assert "past messages:" in result and "8443" in result
    assert "9000" not in result


async def test_turns_still_answer_by_words_when_embeddings_fail(harness: Harness) -> None:
    await harness.bot.notes.save(
        NoteDraft(CHANNEL, "vpn", "the VPN gateway is vpn-2"), actor="seed"
    )
    await embedded(harness)
    harness.ollama.models = ["qwen3:8b"]  # the embedding model is gone: a 404

    harness.ollama.reply("vpn-2.")
    await harness.say("which VPN gateway?")

    assert harness.adapter.replies[-1] == "vpn-2."
    assert "vpn-2" in harness.last_prompt()[-1]["content"].split("<relevant-memories>")[1]


async def test_the_daemon_starts_before_the_embedding_model_is_pulled(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.models = ["qwen3:8b"]  # `ollama pull nomic-embed-text` not done yet
    fake_ollama.embedding_dim = DIM
    h = await start_harness(
        tmp_path, fake_ollama, clock, ollama={"embed_model": "nomic-embed-text"}
    )
    try:
        await h.bot.notes.save(NoteDraft(CHANNEL, "vpn", "the VPN gateway is vpn-2"), actor="t")
        h.ollama.reply("vpn-2.")
        await h.say("which VPN gateway?")
        assert h.adapter.replies[-1] == "vpn-2."
        assert h.bot.vectors.state is None  # words alone until the model is there
        assert await h.bot.vectors.pending() == 0  # nothing is queued before the setup

        fake_ollama.models.append("nomic-embed-text")
        await h.bot.vectors.prepare()
        assert await h.bot.vectors.backfill() >= 1  # the note saved meanwhile is embedded
    finally:
        await h.bot.stop()
