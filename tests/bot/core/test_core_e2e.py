"""End to end through the real core: commands, cards, approvals, model turns, isolation."""

from __future__ import annotations

from pathlib import Path

from adapters.base import APPROVE, REJECT
from memory import Scope
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

CHANNEL = Scope.parse("channel:test/C1")
ALICE = Scope.parse("user:test/UALICE")


async def test_remember_card_approve_then_recall_sits_next_to_the_question(
    harness: Harness,
) -> None:
    harness.script_title("staging-db", "staging DB is pg-stage-2")
    await harness.say("remember that the staging DB is pg-stage-2.internal")

    [card] = harness.adapter.cards
    assert card.reactions == [APPROVE, REJECT]
    assert "channel:test/C1" in card.text and "`staging-db`" in card.text
    assert await harness.bot.notes.fetch(CHANNEL, "staging-db") is None  # nothing saved yet

    await harness.react(card, APPROVE)
    note = await harness.bot.notes.fetch(CHANNEL, "staging-db")
    assert note is not None and note.body == "the staging DB is pg-stage-2.internal"
    assert card.current.startswith("✅ Saved `staging-db`") and "pg-stage-2" in card.current

    harness.ollama.reply("It is pg-stage-2.internal.")
    await harness.say("which host runs the staging database?")
    assert harness.adapter.replies[-1] == "It is pg-stage-2.internal."
    prompt = harness.last_prompt()
    assert "- staging-db: staging DB is pg-stage-2" in prompt[0]["content"]  # the index
    tail = prompt[-1]
    assert tail["role"] == "user"
    assert tail["content"].startswith("<relevant-memories>\n- [channel:test/C1] staging-db")
    assert tail["content"].endswith("which host runs the staging database?")


async def test_only_the_requester_or_an_admin_decides(harness: Harness) -> None:
    harness.script_title("deploy-day", "deploys happen on tuesdays")
    await harness.say("remember that deploys happen on tuesdays")
    [card] = harness.adapter.cards

    await harness.react(card, APPROVE, user="UMALLORY")
    assert await harness.bot.notes.fetch(CHANNEL, "deploy-day") is None
    assert card.edits == []

    await harness.react(card, APPROVE, user="UADMIN")
    assert await harness.bot.notes.fetch(CHANNEL, "deploy-day") is not None
    assert card.current.startswith("✅ Saved")


async def test_a_decision_applies_once(harness: Harness) -> None:
    await harness.say("remember that the VPN gateway is vpn-2")
    [card] = harness.adapter.cards
    await harness.react(card, APPROVE)
    await harness.react(card, REJECT)
    await harness.react(card, APPROVE)
    assert len(await harness.bot.notes.fetch_history()) == 1
    assert card.current.startswith("✅ Saved")


async def test_reject_saves_nothing(harness: Harness) -> None:
    await harness.say("remember that lunch is at noon")
    [card] = harness.adapter.cards
    await harness.react(card, REJECT)
    assert await harness.bot.notes.list_notes() == []
    assert card.current.startswith("❌ Discarded")


async def test_an_expired_card_cannot_be_approved(harness: Harness, clock: FakeClock) -> None:
    await harness.say("remember that the wiki moved to docs.internal")
    [card] = harness.adapter.cards
    clock.advance(hours=25)
    await harness.react(card, APPROVE)
    assert await harness.bot.notes.list_notes() == []
    assert card.current.startswith("⌛ Expired")


async def test_expired_cards_are_marked_by_the_expiry_sweep(
    harness: Harness, clock: FakeClock
) -> None:
    await harness.say("remember that the wiki moved to docs.internal")
    [card] = harness.adapter.cards
    clock.advance(hours=24, seconds=1)
    assert await harness.bot.approvals.expire() == 1
    assert card.current.startswith("⌛ Expired")


async def test_a_decision_after_a_restart_works_on_a_card_posted_before(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    first = await start_harness(tmp_path, fake_ollama, clock)
    await first.say("remember that backups run at 02:00 UTC")
    [card] = first.adapter.cards
    await first.bot.stop()
    await first.bot.stop()  # stopping twice is harmless
    assert first.adapter.closed == 1

    second = await start_harness(tmp_path, fake_ollama, clock, RecordingAdapter())
    second.adapter.sent.append(card)  # the card still exists on the platform
    try:
        await second.react(card, APPROVE)
        [note] = await second.bot.notes.list_notes()
        assert note.body == "backups run at 02:00 UTC"
        assert card.current.startswith("✅ Saved")
    finally:
        await second.bot.stop()


async def test_a_dm_note_never_reaches_a_channel_prompt(harness: Harness) -> None:
    await harness.say("remember that my locker code is 4711", dm=True)
    [card] = harness.adapter.cards
    assert "(private)" in card.text
    await harness.react(card, APPROVE)
    [note] = await harness.bot.notes.list_notes()
    assert note.scope == ALICE and note.private

    harness.ollama.reply("I don't know.")
    await harness.say("what is my locker code?")
    channel_prompt = str(harness.last_prompt())
    assert "4711" not in channel_prompt and "locker" not in channel_prompt.replace(
        "what is my locker code?", ""
    )

    harness.ollama.reply("It is 4711.")
    await harness.say("what is my locker code?", dm=True)
    assert "4711" in harness.last_prompt()[-1]["content"]


async def test_one_channel_never_sees_another_channels_notes(harness: Harness) -> None:
    await harness.say("remember that the release train leaves on fridays", channel="C1")
    await harness.react(harness.adapter.cards[0], APPROVE)
    harness.ollama.reply("No idea.")
    await harness.say("when does the release train leave?", channel="C2")
    assert "fridays" not in str(harness.last_prompt())
    await harness.say("what do you remember about release train", channel="C2")
    assert harness.adapter.replies[-1].startswith("I remember nothing")


async def test_remember_about_myself_in_a_channel_makes_a_shared_user_note(
    harness: Harness,
) -> None:
    await harness.say("remember that I prefer answers in German")
    [card] = harness.adapter.cards
    assert "user:test/UALICE" in card.text and "(private)" not in card.text
    await harness.react(card, APPROVE)
    [note] = await harness.bot.notes.list_notes()
    assert note.scope == ALICE and not note.private


async def test_duplicate_events_are_answered_once_even_after_a_restart(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    first = await start_harness(tmp_path, fake_ollama, clock)
    event = first.adapter.message("help", event_id="Ev0123")
    await first.send(event)
    await first.send(event)
    assert len(first.adapter.replies) == 1
    await first.bot.stop()

    second = await start_harness(tmp_path, fake_ollama, clock, first.adapter)
    try:
        await second.send(event)  # a gateway replay after the restart
        assert len(first.adapter.replies) == 1
    finally:
        await second.bot.stop()


async def test_forget_and_undo(harness: Harness) -> None:
    await harness.say("remember that the oncall phone is in drawer 3")
    await harness.react(harness.adapter.cards[0], APPROVE)
    [note] = await harness.bot.notes.list_notes()

    await harness.say("forget the oncall phone")
    forget_card = harness.adapter.cards[-1]
    assert forget_card.text.startswith("🗑️ Forget this note?")
    await harness.react(forget_card, APPROVE)
    assert await harness.bot.notes.list_notes() == []

    await harness.say("undo")
    assert harness.adapter.replies[-1].startswith("↩️ Undone. Restored")
    [back] = await harness.bot.notes.list_notes()
    assert (back.topic, back.body) == (note.topic, note.body)


async def test_what_do_you_remember_lists_only_what_this_conversation_sees(
    harness: Harness,
) -> None:
    await harness.say("remember that the build cache lives on nfs-3")
    await harness.react(harness.adapter.cards[0], APPROVE)
    await harness.say("remember that my editor is helix", dm=True)
    await harness.react(harness.adapter.cards[-1], APPROVE)

    await harness.say("what do you remember?")
    listing = harness.adapter.replies[-1]
    assert "nfs-3" in listing or "build" in listing
    assert "helix" not in listing


async def test_read_only_channel_gets_no_proposing_tools(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(
        tmp_path, fake_ollama, clock, bot={"read_only_channels": ["channel:test/CRO"]}
    )
    try:
        await h.say("remember that this is read-only", channel="CRO")
        assert h.adapter.cards == []
        assert "read-only" in h.adapter.replies[-1]

        fake_ollama.reply("fine")
        await h.say("hello", channel="CRO")
        tools = {t["function"]["name"] for t in fake_ollama.chat_requests[-1]["tools"]}
        assert {"memory_read", "memory_search"} <= tools
        assert tools.isdisjoint({"propose_note", "propose_forget", "propose_skill"})
    finally:
        await h.bot.stop()


async def test_note_title_from_structured_output_with_one_retry(harness: Harness) -> None:
    harness.ollama.reply("Sure! The topic is staging.")  # not JSON: retried once
    harness.script_title("Staging DB Host", "  staging   DB is pg-stage-2 ")
    await harness.say("remember that the staging DB is pg-stage-2")
    [card] = harness.adapter.cards
    assert "Topic: `staging-db-host`" in card.text
    assert "Summary: staging DB is pg-stage-2" in card.text
    schema = harness.ollama.chat_requests[0]["format"]
    assert set(schema["required"]) == {"topic", "summary"}


async def test_note_title_falls_back_when_the_model_keeps_failing(harness: Harness) -> None:
    harness.ollama.reply("no")
    harness.ollama.reply("still no")
    await harness.say("remember that the build cache lives on nfs-3. It is cleaned weekly.")
    [card] = harness.adapter.cards
    assert "Topic: `build-cache-lives-nfs`" in card.text
    assert "Summary: the build cache lives on nfs-3." in card.text


async def test_undo_in_a_channel_never_reaches_a_private_note(harness: Harness) -> None:
    await harness.say("remember that my salary review is in March", dm=True)
    await harness.react(harness.adapter.cards[0], APPROVE)
    await harness.say("undo")
    assert harness.adapter.replies[-1] == "There is no change of yours to undo here."
    [kept] = await harness.bot.notes.list_notes()
    assert kept.private and "March" in kept.body

    await harness.say("undo", dm=True)  # in the DM the same change is the person's to undo
    assert harness.adapter.replies[-1].startswith("↩️ Undone. Removed `")
    assert await harness.bot.notes.list_notes() == []
