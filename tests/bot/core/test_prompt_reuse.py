"""A conversation's prompt grows only at its end: each turn sends the previous turn's prompt
again, byte for byte (the person's message with the memories recalled for it, and the
answer as the model wrote it), so a model server reads only what is new. What the person
sees and what search finds stay the message itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory import NoteDraft, Scope
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

C1 = Scope.parse("channel:test/C1")


def turns(h: Harness) -> list[list[dict[str, Any]]]:
    return [r["messages"] for r in h.ollama.chat_requests if "format" not in r]


async def test_each_turn_sends_the_last_prompt_again_and_adds_only_what_is_new(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(C1, "staging-db", "staging is pg-stage-2"), actor="t")
        fake_ollama.reply("  It is pg-stage-2.  ")  # spaces the posted reply drops
        await h.say("where is the staging database?")
        fake_ollama.reply("Port 5432.")
        await h.say("and which port?")
        first, second = turns(h)
        assert second[: len(first)] == first  # the whole first prompt, unchanged
        assert "<relevant-memories>" in first[-1]["content"]  # recall beside its message
        assert second[len(first)] == {"role": "assistant", "content": "  It is pg-stage-2.  "}
        assert second[-1]["content"].endswith("and which port?")
        assert h.adapter.replies[0] == "It is pg-stage-2."  # posted as the person sees it
        entries = (await h.bot.log.fetch_history("test/C1/")).entries
        assert entries[0].content == "where is the staging database?"  # searched as said
    finally:
        await h.bot.stop()


async def test_the_message_as_the_model_read_it_is_redacted_like_the_message(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(C1, "deploys", "deploys run on Tuesdays"), actor="t")
        token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        await h.say(f"when do deploys run? my token is {token}")
        async with h.bot.db.conn.execute("SELECT content, prompt FROM messages") as cursor:
            rows = await cursor.fetchall()
        assert rows and all(token not in (row[0] + row[1]) for row in rows)
        assert any("<relevant-memories>" in row[1] for row in rows)
    finally:
        await h.bot.stop()


async def test_a_note_the_history_shows_as_recalled_is_not_recalled_again_unless_it_changed(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(C1, "staging-db", "staging is pg-stage-2"), actor="t")
        await h.say("where is the staging database?")
        await h.say("and the staging database port?")
        first, second = turns(h)
        assert "staging-db" in first[-1]["content"]
        assert "staging-db" not in second[-1]["content"]  # the history above shows it
        await h.bot.notes.save(NoteDraft(C1, "staging-db", "staging is pg-stage-3"), actor="t")
        await h.say("which staging database again?")
        assert "pg-stage-3" in turns(h)[-1][-1]["content"]  # changed, so recalled anew
    finally:
        await h.bot.stop()
