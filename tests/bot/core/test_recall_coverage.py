"""A turn's recall tells the model when it ranked by words alone: the embedding model did not
answer, or only some notes or messages have a vector yet. The model sees it as a line of
the `<relevant-memories>` block; the log says it once, when it changes."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.daemon.app import Bot
from memory import NoteDraft, Scope
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, make_settings, start_harness

CHANNEL = Scope.parse("channel:test/C1")
EMBED = "nomic-embed-text"
NOTES = 5
PARTIAL_NOTES = (
    "(vectors for 3 of 5 notes; the rest are ranked by their words alone until lorebot "
    "has embedded them)"
)
PARTIAL_MESSAGES = (
    "(vectors for 0 of 2 messages; the rest are ranked by their words alone until lorebot "
    "has embedded them)"
)


def memories(h: Harness) -> str:
    """The `<relevant-memories>` block the model was given on the last turn."""
    question = str(h.last_prompt()[-1]["content"])
    assert "<relevant-memories>" in question, question
    return question.split("<relevant-memories>")[1].split("</relevant-memories>")[0]


async def ask(h: Harness, text: str = "which gateway do we use?") -> str:
    """The memories recalled for `text`, in a conversation whose earlier turns are folded
    into a summary first: notes its history shows as recalled are not recalled again."""
    entries = (await h.bot.log.fetch_history("test/C1/")).entries
    if entries:
        await h.bot.log.compact("test/C1/", entries[-1].id, "")
    h.ollama.reply("gw-2.")
    await h.say(text)
    return memories(h)


async def bot_without_embedding_task(tmp_path: Path, fake: FakeOllama, clock: FakeClock) -> Harness:
    """A bot with the embedding model set but no background embedding (a one-shot bot, as
    `lorebot jobs run` starts), so the test decides how many items have a vector."""
    fake.models = ["qwen3:8b", EMBED]
    settings = make_settings(tmp_path / "bot.db", fake.url, ollama={"embed_model": EMBED})
    adapter = RecordingAdapter()
    bot = Bot(settings, [adapter], clock=clock, daemon=False)
    await bot.start()
    return Harness(bot, adapter, fake, clock)


async def save_notes(h: Harness) -> None:
    for n in range(NOTES):
        draft = NoteDraft(CHANNEL, f"gateway-{n}", f"the gateway of site {n} is gw-{n}")
        await h.bot.notes.save(draft, actor="seed")


async def test_recall_counts_the_notes_and_messages_without_vectors_until_all_have_one(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.core.recall")
    h = await bot_without_embedding_task(tmp_path, fake_ollama, clock)
    try:
        await save_notes(h)
        await h.bot.vectors.backfill(batch_size=1, limit=3)

        first = await ask(h)
        assert PARTIAL_NOTES in first
        assert "messages" not in first.split("\n- ")[0]  # no message was logged yet
        assert first.index(PARTIAL_NOTES) < first.index("gateway-")

        second = await ask(h)  # the first turn's two messages wait for their vectors
        assert PARTIAL_NOTES in second
        assert PARTIAL_MESSAGES in second

        await h.bot.vectors.backfill()
        third = await ask(h)
        assert "vectors for" not in third
        assert "words alone" not in third
    finally:
        await h.bot.stop()
    said = [r.getMessage() for r in caplog.records if r.name == "bot.core.recall"]
    assert said.count(f"recall: {PARTIAL_NOTES[1:-1]}") == 1  # once, not on every turn
    assert said.count(f"recall: {PARTIAL_MESSAGES[1:-1]}") == 1
    assert "recall: every note has its vector now" in said


async def test_without_an_embedding_model_recall_says_nothing_about_vectors(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await bot_without_embedding_task(tmp_path, fake_ollama, clock)
    try:
        await save_notes(h)
        await h.bot.vectors.backfill(batch_size=1, limit=3)
        assert PARTIAL_NOTES in await ask(h)
    finally:
        await h.bot.stop()

    # The operator unsets ollama.embed_model: the same store, ranked by words as configured.
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        block = await ask(h)
        assert "gateway-" in block
        assert "vectors for" not in block
        assert "words alone" not in block
    finally:
        await h.bot.stop()


async def test_recall_says_it_ranked_by_words_alone_when_the_embedding_model_is_gone(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.models = ["qwen3:8b", EMBED]
    h = await start_harness(tmp_path, fake_ollama, clock, ollama={"embed_model": EMBED})
    try:
        await save_notes(h)
        async with asyncio.timeout(5):
            while await h.bot.vectors.pending():  # noqa: ASYNC110 (a count in SQLite)
                await asyncio.sleep(0.01)
        embedded = await ask(h)
        assert "gateway-" in embedded
        assert "vectors for" not in embedded  # every note has its vector: nothing to say
        assert "words alone" not in embedded

        fake_ollama.models = ["qwen3:8b"]  # `ollama rm nomic-embed-text`: a 404
        notice = f"(ranked by words alone: the embedding model {EMBED}:latest did not answer)"
        again = await ask(h)  # the same question: its vector is remembered
        assert notice not in again and "gateway-" in again
        gone = await ask(h, "which gateway fronts the api?")
        assert notice in gone
        assert "gateway-" in gone
    finally:
        await h.bot.stop()
