"""Past messages in every turn: history brought in with `lorebot history import` is recalled
next to the question, with its date and author, without the model having to search, and
only where the conversation may read it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from memory import NoteDraft, Scope
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

Importer = Callable[..., Awaitable[str]]


@pytest.fixture
def import_history(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Importer:
    """Run `lorebot history import` on JSON Lines, into the database the harness opens."""
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(env / "bot.db"))

    async def run(lines: list[dict[str, Any]], *flags: str) -> str:
        path = env / "history.jsonl"
        path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
        code = await asyncio.to_thread(main, ["history", "import", str(path), *flags])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    return run


@pytest.fixture
async def bot(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Callable[..., Awaitable[Harness]]]:
    """Start the bot on the imported database (after the import, as an operator would)."""
    started: list[Harness] = []

    async def start(**sections: dict[str, Any]) -> Harness:
        harness = await start_harness(env, fake_ollama, clock, **sections)
        started.append(harness)
        return harness

    yield start
    for harness in started:
        await harness.bot.stop()


def said(conversation: str, author: str, when: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "conversation": conversation,
        "author": author,
        "timestamp": when,
        "text": text,
        **extra,
    }


def memories(h: Harness) -> str:
    """The `<relevant-memories>` block of the last question the model got ("" if none)."""
    tail: str = h.last_prompt()[-1]["content"]
    if not tail.startswith("<relevant-memories>\n"):
        return ""
    return tail[: tail.index("</relevant-memories>") + len("</relevant-memories>")]


FREEZE = said(
    "channel:test/C1",
    "Priya",
    "2026-10-02T14:03:00Z",
    "the deploy freeze starts on the 14th",
    thread="1790000000.1",
)


async def test_a_message_from_last_month_is_recalled_next_to_the_question(
    import_history: Importer, bot: Callable[..., Awaitable[Harness]]
) -> None:
    await import_history([FREEZE])
    h = await bot()
    h.ollama.reply("It starts on the 14th, Priya said so on October 2.")
    await h.say("when does the deploy freeze start?")

    assert h.adapter.replies == ["It starts on the 14th, Priya said so on October 2."]
    [request] = h.ollama.chat_requests  # answered without a search round
    tail = request["messages"][-1]["content"]
    assert tail == (
        "<relevant-memories>\n"
        "Past messages (date UTC, author: text):\n"
        "- 2026-10-02 14:03 Priya: the deploy freeze starts on the 14th\n"
        "</relevant-memories>\n"
        "\n"
        "when does the deploy freeze start?"
    )


async def test_recall_never_crosses_channels_or_reads_anyone_elses_dm(
    import_history: Importer, bot: Callable[..., Awaitable[Harness]]
) -> None:
    await import_history(
        [
            said(
                "channel:test/C2",
                "Carol",
                "2026-10-01T09:00:00Z",
                "the vendor contract renews in March",
                thread="1790000000.3",
            ),
            said(
                "user:test/UBOB",
                "Bob",
                "2026-10-01T10:00:00Z",
                "vendor contract: I asked for a raise, keep it between us",
            ),
        ],
        "--include-private",
    )
    h = await bot()
    await h.say("when does the vendor contract renew?", user="UALICE", channel="C1")
    assert memories(h) == ""
    await h.say("when does the vendor contract renew?", user="UALICE", dm=True)
    assert memories(h) == ""
    await h.say("when does the vendor contract renew?", user="UCAROL", channel="C2")
    assert "Carol: the vendor contract renews in March" in memories(h)
    assert "raise" not in memories(h)
    await h.say("what did I say about the vendor contract?", user="UBOB", channel="C1")
    assert memories(h) == ""  # a DM stays out of channels, even for its own person
    await h.say("what did I say about the vendor contract?", user="UBOB", dm=True)
    assert "Bob: vendor contract: I asked for a raise" in memories(h)
    assert "March" not in memories(h)


async def test_messages_the_history_already_shows_are_not_repeated(
    import_history: Importer, bot: Callable[..., Awaitable[Harness]]
) -> None:
    await import_history(
        [
            # The channel's own conversation (no thread), where the questions are asked.
            said(
                "channel:test/C1",
                "Marco",
                "2026-10-05T08:00:00Z",
                "the staging db moved to pg-stage-3",
            ),
            said(
                "channel:test/C1",
                "Priya",
                "2026-10-06T08:00:00Z",
                "staging db backups run nightly at 02:00",
                thread="1790000000.2",
            ),
        ]
    )
    h = await bot()
    await h.say("where is the staging db now?")
    prompt = h.last_prompt()
    assert [m["content"] for m in prompt[1:-1]] == []  # imported history is recalled
    block = memories(h)
    assert "- 2026-10-05 08:00 Marco: the staging db moved to pg-stage-3" in block
    assert "- 2026-10-06 08:00 Priya: staging db backups run nightly at 02:00" in block

    await h.say("and which staging db host again?")
    history = [m["content"] for m in h.last_prompt()[1:-1]]
    # The question as the model read it before, with what was recalled for it.
    assert history[0].endswith("\nwhere is the staging db now?") and "pg-stage-3" in history[0]
    block = memories(h)
    assert "backups run nightly" in block and "pg-stage-3" in block
    assert "where is the staging db now" not in block  # the dialogue shows it already


async def test_notes_and_past_messages_share_the_memory_budget(
    import_history: Importer, bot: Callable[..., Awaitable[Harness]]
) -> None:
    text = "rotation day {}: the on-call rotation moves to follow-the-sun"
    await import_history(
        [
            said(
                "channel:test/C1",
                "Priya",
                f"2026-10-0{day}T09:00:00Z",
                text.format(day),
                thread=f"1790000000.{day}",
            )
            for day in (1, 2, 3)
        ]
    )
    h = await bot(memory={"token_budget": 100})
    body = "The on-call rotation is weekly, handed over on Mondays. " * 20
    await h.bot.notes.save(
        NoteDraft(Scope.parse("channel:test/C1"), "on-call", "on-call rotation", body), actor="t"
    )
    await h.say("how does the on-call rotation work?")
    block = memories(h)
    assert len(block.encode()) <= 100 * 4
    lines = block.splitlines()
    assert lines[1].startswith("- [channel:test/C1] on-call: on-call rotation — The on-call")
    assert lines[1].endswith("…")  # the note is cut to leave room for what was said
    assert lines[2] == "Past messages (date UTC, author: text):"
    assert lines[3].startswith("- 2026-10-0") and "Priya: rotation day" in lines[3]


async def test_history_imported_after_lorebot_ran_there_stays_out_of_its_dialogue(
    import_history: Importer, bot: Callable[..., Awaitable[Harness]]
) -> None:
    """Imported messages are recalled, never taken for the latest turns of the dialogue:
    they are older, though stored after it."""
    h = await bot()
    h.ollama.reply("Hi! The freeze is not announced yet.")
    await h.say("is there a deploy freeze?")
    await h.bot.stop()
    chatter = [
        said("channel:test/C1", "Sam", f"2026-10-0{day}T09:00:00Z", f"lunch plans for day {day}")
        for day in range(1, 8)
    ]
    await import_history(
        [
            *chatter,
            said(
                "channel:test/C1",
                "Priya",
                "2026-10-02T14:03:00Z",
                "the deploy freeze starts on the 14th",
            ),
        ]
    )
    h = await bot()
    h.ollama.reply("It starts on the 14th.")
    await h.say("so when does the deploy freeze start?")
    dialogue = [m["content"] for m in h.last_prompt()[1:-1]]
    assert dialogue == ["is there a deploy freeze?", "Hi! The freeze is not announced yet."]
    assert "the deploy freeze starts on the 14th" in memories(h)
