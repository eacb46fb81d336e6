"""`/lorebot …` through the real dispatcher and core: the same commands as messages, with
answers for the person alone, cards in the conversation, and no way around allowlists or
isolation."""

from __future__ import annotations

from pathlib import Path

from adapters.base import APPROVE
from bot.core.replies import NOT_ALLOWED_REPLY
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness


async def save(h: Harness, text: str, *, user: str = "UALICE", **where: object) -> None:
    """A note saved the way people save one: `remember …`, then ✅ on the card."""
    h.script_title(text.split()[0].lower(), text)
    await h.say(f"remember that {text}", user=user, **where)  # type: ignore[arg-type]
    await h.react(h.adapter.cards[-1], APPROVE, user=user)


async def test_remember_posts_its_card_in_the_channel_and_tells_the_person_alone(
    harness: Harness,
) -> None:
    harness.script_title("staging-db", "The staging database is db-2")
    command, answers = harness.adapter.slash("remember that the staging database is db-2")
    await harness.send(command)
    [card] = harness.adapter.cards
    assert card.conversation.channel_id == "C1" and "staging-db" in card.text
    assert harness.adapter.replies == []  # nothing else in the channel
    assert len(answers) == 1 and "react ✅" in answers[0]

    await harness.react(card, APPROVE)
    command, answers = harness.adapter.slash("recall staging")
    await harness.send(command)
    assert "staging-db" in answers[0]


async def test_recall_in_a_channel_shows_the_persons_own_notes_to_them_alone(
    harness: Harness,
) -> None:
    await save(harness, "alicepin is 4411", dm=True)
    await save(harness, "bobpin is 9922", user="UBOB", dm=True)
    await save(harness, "otherroom uses db-9", channel="C2")
    await save(harness, "thisroom uses db-1")
    posted = len(harness.adapter.sent)

    command, answers = harness.adapter.slash("recall")
    await harness.send(command)
    [answer] = answers
    assert "alicepin" in answer and "thisroom" in answer
    assert "bobpin" not in answer and "otherroom" not in answer
    assert len(harness.adapter.sent) == posted  # nothing was posted in the channel

    await harness.say("what do you remember?")  # the same in the channel, for everyone
    assert "thisroom" in harness.adapter.replies[-1]
    assert "alicepin" not in harness.adapter.replies[-1]


async def test_an_unknown_subcommand_gets_the_help_and_never_reaches_the_model(
    harness: Harness,
) -> None:
    command, answers = harness.adapter.slash("deploy prod")
    await harness.send(command)
    assert answers[0].startswith("I have no command `deploy`.")
    assert "/lorebot recall" in answers[0]
    assert harness.ollama.chat_requests == [] and harness.adapter.sent == []


async def test_forget_and_undo_answer_privately_and_forget_needs_a_note(
    harness: Harness,
) -> None:
    command, answers = harness.adapter.slash("forget")
    await harness.send(command)
    assert answers == ["Tell me which note to forget, e.g. `forget staging-db`."]

    command, answers = harness.adapter.slash("undo")
    await harness.send(command)
    assert answers == ["There is no change of yours to undo here."]
    assert harness.adapter.sent == []


async def test_a_person_outside_the_allowlist_is_told_so_and_nothing_runs(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(
        tmp_path, fake_ollama, clock, bot={"allowed_users": ["user:test/UALICE"]}
    )
    try:
        command, answers = h.adapter.slash("remember that the vpn is down", user="UMALLORY")
        await h.send(command)
        assert answers == [NOT_ALLOWED_REPLY]
        assert h.adapter.sent == [] and fake_ollama.chat_requests == []
    finally:
        await h.bot.stop()
