"""Waiting cards reach their approvers: once a card has waited `bot.card_reminder_minutes`,
each person who may decide it gets it once by DM, with its buttons, and a click there
decides it as a click on the card does."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.approvals.clicks import OTHER_CARD
from bot.approvals.reminders import approvers
from memory import Scope
from memory.stores.proposals import Proposal
from tests.fakes.adapter import ButtonsAdapter, Sent
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

ADMINS = frozenset({"user:test/UADMIN", "user:slack/UOTHER"})


@pytest.fixture
async def h(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> AsyncIterator[Harness]:
    harness = await start_harness(tmp_path, fake_ollama, clock, ButtonsAdapter())
    try:
        yield harness
    finally:
        await harness.bot.stop()


async def card_for(h: Harness) -> Sent:
    h.script_title("standup", "standup at 10")
    await h.say("remember that standup is at 10")
    return h.adapter.cards[-1]


def dms(h: Harness) -> list[Sent]:
    return [s for s in h.adapter.sent if s.conversation.is_dm]


async def test_a_card_waiting_past_the_reminder_time_reaches_its_requester_once(
    h: Harness,
) -> None:
    await card_for(h)
    reminders = h.bot.services.reminders
    h.clock.advance(minutes=29)
    assert await reminders.remind_due() == 0 and dms(h) == []
    h.clock.advance(minutes=1)
    assert await reminders.remind_due() == 1
    [reminder] = dms(h)
    assert reminder.conversation.channel_id == "D-UALICE"
    assert reminder.text.startswith("⏰ Card #1 is waiting for your decision: save `standup`")
    assert [b.label for b in reminder.buttons] == ["Approve", "Decline"]
    assert await reminders.remind_due() == 0 and len(dms(h)) == 1  # once


async def test_a_click_on_the_reminder_decides_the_card(h: Harness) -> None:
    card = await card_for(h)
    h.clock.advance(minutes=30)
    await h.bot.services.reminders.remind_due()
    [reminder] = dms(h)
    event, answers = h.adapter.click(reminder)  # type: ignore[attr-defined]
    await h.send(event)
    assert await h.bot.notes.fetch(Scope.parse("channel:test/C1"), "standup") is not None
    assert card.current.startswith("✅ Saved")
    assert answers == ["Card #1 is approved."]  # the card they would see change is elsewhere
    assert reminder.buttons == []  # finished with the card, in words of its own:
    assert reminder.current == (
        "✅ Card #1 (save `standup`) was approved by user:test/UALICE at 2026-11-02 09:30 "
        "UTC; its card says what was done."
    )


async def test_a_reminder_finished_by_a_reaction_on_the_card_loses_its_buttons(
    h: Harness,
) -> None:
    card = await card_for(h)
    h.clock.advance(minutes=30)
    await h.bot.services.reminders.remind_due()
    [reminder] = dms(h)
    await h.react(card, "❌")
    assert reminder.current.startswith("❌ Card #1 (save `standup`) was declined by")
    assert reminder.buttons == [] and "undo" not in reminder.current


async def test_a_reminder_sent_as_its_card_is_decided_is_finished_too(h: Harness) -> None:
    card = await card_for(h)
    h.clock.advance(minutes=30)
    reminders = h.bot.services.reminders
    [due] = await h.bot.proposals.fetch_to_remind(h.clock() - reminders.after, ["test"])
    await h.react(card, "✅")  # decided and finished before the reminder is recorded
    await reminders._send(due, "user:test/UALICE")
    [reminder] = dms(h)
    assert reminder.current.startswith("✅ Card #1") and reminder.buttons == []


async def test_a_click_in_a_dm_on_a_message_that_reminded_nobody_decides_nothing(
    h: Harness,
) -> None:
    card = await card_for(h)
    h.clock.advance(minutes=30)
    await h.bot.services.reminders.remind_due()
    [reminder] = dms(h)
    event, answers = h.adapter.click(reminder)  # type: ignore[attr-defined]
    await h.send(dataclasses.replace(event, message_id="m-forged"))
    assert answers == [OTHER_CARD] and card.edits == []


async def test_a_decided_card_is_never_reminded_of(h: Harness) -> None:
    card = await card_for(h)
    await h.react(card, "✅")
    h.clock.advance(hours=1)
    assert await h.bot.services.reminders.remind_due() == 0 and dms(h) == []


async def test_no_reminders_when_turned_off(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(
        tmp_path, fake_ollama, clock, ButtonsAdapter(), bot={"card_reminder_minutes": 0}
    )
    try:
        await card_for(h)
        h.clock.advance(hours=2)
        assert await h.bot.services.reminders.remind_due() == 0 and dms(h) == []
    finally:
        await h.bot.stop()


async def test_the_reminder_is_claimed_once_across_replicas(h: Harness) -> None:
    await card_for(h)
    assert await h.bot.proposals.claim_reminder(1)
    assert not await h.bot.proposals.claim_reminder(1)  # another replica's try
    h.clock.advance(hours=1)
    assert await h.bot.services.reminders.remind_due() == 0


def proposal(kind: str, **payload: str) -> Proposal:
    now = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    return Proposal(
        1,
        kind,
        "pending",
        "user:test/UALICE",
        "test",
        {"platform": "test", "channel_id": "C1"},
        "m-1",
        dict(payload),
        now,
        now + timedelta(hours=24),
        None,
        "",
    )


def test_who_is_reminded_of_which_card() -> None:
    own = proposal("note_save", scope="channel:test/C1", topic="t")
    assert approvers(own, ADMINS) == ["user:test/UALICE"]
    team = proposal("note_save", scope="team:test/T1", topic="t")
    assert approvers(team, ADMINS) == ["user:test/UALICE", "user:test/UADMIN"]
    admins_only = proposal("action", tool="restart", server_id="ops", approvers="admins")
    assert approvers(admins_only, ADMINS) == ["user:test/UADMIN"]
