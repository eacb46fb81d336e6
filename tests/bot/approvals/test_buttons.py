"""Approve / Decline buttons on cards, and typed decisions, on an adapter that shows
buttons: a click decides by a reaction's rules, and one that cannot is answered to the
clicker alone and changes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from adapters.base import APPROVE, ConversationRef
from bot.approvals.buttons import read_value
from bot.approvals.clicks import CHANGED, NOT_A_CARD, OTHER_CARD
from bot.core.replies import BUSY_REPLY
from memory import Scope
from tests.fakes.adapter import PLATFORM, ButtonsAdapter, Sent
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

CHANNEL = Scope.parse("channel:test/C1")


@pytest.fixture
async def h(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> AsyncIterator[Harness]:
    harness = await start_harness(tmp_path, fake_ollama, clock, ButtonsAdapter())
    try:
        yield harness
    finally:
        await harness.bot.stop()


def adapter(h: Harness) -> ButtonsAdapter:
    assert isinstance(h.adapter, ButtonsAdapter)
    return h.adapter


async def card_for(h: Harness, fact: str = "standup is at 10", channel: str = "C1") -> Sent:
    h.script_title(fact.split()[0], fact)
    await h.say(f"remember that {fact}", channel=channel)
    return h.adapter.cards[-1]


async def click(h: Harness, card: Sent, label: str = "Approve", **kw: str | bool) -> list[str]:
    event, answers = adapter(h).click(card, label, **kw)  # type: ignore[arg-type]
    await h.send(event)
    return answers


def refused(reason: str) -> float:
    value = REGISTRY.get_sample_value("lorebot_decisions_refused_total", {"reason": reason})
    return value or 0.0


async def saved(h: Harness, topic: str = "standup") -> bool:
    return await h.bot.notes.fetch(CHANNEL, topic) is not None


async def test_a_card_has_approve_and_decline_buttons_beside_its_reactions(h: Harness) -> None:
    card = await card_for(h)
    assert [(b.label, b.style) for b in card.buttons] == [
        ("Approve", "primary"),
        ("Decline", "danger"),
    ]
    assert card.reactions == ["✅", "❌"]
    assert "Click Approve (or react ✅)" in card.text
    assert all(len(b.value) <= 100 for b in card.buttons)  # Discord's custom_id limit


async def test_the_requesters_click_decides_and_the_card_says_who_and_when(h: Harness) -> None:
    card = await card_for(h)
    answers = await click(h, card)
    assert await saved(h)
    assert card.current.startswith("✅ Saved `standup`")
    assert card.current.endswith("Decided by user:test/UALICE at 2026-11-02 09:00 UTC.")
    assert card.buttons == []  # taken away with the edit
    assert answers == []  # the edited card is the answer


async def test_decline_discards(h: Harness) -> None:
    card = await card_for(h)
    await click(h, card, "Decline")
    assert not await saved(h)
    assert card.current.startswith("❌ Discarded")


async def test_someone_elses_click_is_answered_to_them_alone_and_changes_nothing(
    h: Harness,
) -> None:
    card = await card_for(h)
    before = refused("not allowed")
    answers = await click(h, card, user="UBOB")
    assert answers == [
        "Only the person who asked (user:test/UALICE) or an admin can decide card #1."
    ]
    assert not await saved(h) and card.edits == [] and card.buttons
    assert refused("not allowed") == before + 1
    await click(h, card, user="UADMIN")
    assert await saved(h)  # an admin may


async def test_a_bots_click_is_dropped_unanswered(h: Harness) -> None:
    card = await card_for(h)
    answers = await click(h, card, is_bot=True)
    assert answers == [] and not await saved(h) and card.edits == []


@pytest.mark.parametrize(
    ("forge", "expected", "reason"),
    [
        (lambda v: v[:-1], NOT_A_CARD, "not a card"),  # a truncated hash
        (lambda v: v + "0" * 100, NOT_A_CARD, "not a card"),  # over the limits
        (lambda v: "lorebot:approve:1:" + "0" * 16, CHANGED, "card changed"),  # a wrong hash
        (lambda v: v.replace(":1:", ":99:"), OTHER_CARD, "other card"),  # never existed
        (lambda v: v.replace(":1:", ":2:"), OTHER_CARD, "other card"),  # another card's id
    ],
)
async def test_a_forged_button_value_decides_nothing(
    h: Harness, forge: object, expected: str, reason: str
) -> None:
    card = await card_for(h)
    await card_for(h, "deploys are on friday")  # card #2, in the same channel
    value = forge(card.button("Approve").value)  # type: ignore[operator]
    before = refused(reason)
    answers = await click(h, card, value=value)
    assert answers == [expected]
    assert not await saved(h) and not await saved(h, "deploys")
    assert refused(reason) == before + 1


async def test_a_click_carrying_a_card_of_another_conversation_decides_nothing(
    h: Harness,
) -> None:
    here = await card_for(h)
    there = await card_for(h, "deploys are on friday", channel="C2")
    answers = await click(h, here, value=there.button("Approve").value)
    assert answers == [OTHER_CARD]
    assert await h.bot.notes.fetch(Scope.parse("channel:test/C2"), "deploys") is None


async def test_a_double_click_applies_once_and_the_second_is_told(h: Harness) -> None:
    card = await card_for(h)
    first, first_answers = adapter(h).click(card)
    second, second_answers = adapter(h).click(card)
    await h.bot.dispatcher.submit(first)
    await h.bot.dispatcher.submit(second)  # checked before the first is decided
    await h.bot.dispatcher.wait_idle()
    assert first_answers == []
    assert second_answers == [
        "Card #1 was already approved by user:test/UALICE at 2026-11-02 09:00 UTC."
    ]
    assert len(await h.bot.notes.list_notes()) == 1
    assert len(card.edits) == 1


async def test_a_click_after_a_reaction_decided_is_told_who_decided(h: Harness) -> None:
    card = await card_for(h)
    decline = card.button("Decline").value  # as the clicker's screen still shows it
    await h.react(card, APPROVE, user="UADMIN")
    answers = await click(h, card, value=decline)
    assert answers == ["Card #1 was already approved by user:test/UADMIN at 2026-11-02 09:00 UTC."]
    assert await saved(h)


async def test_a_click_on_an_expired_card_is_told_so(h: Harness) -> None:
    card = await card_for(h)
    h.clock.advance(hours=25)
    answers = await click(h, card)
    assert not await saved(h)
    assert card.current.startswith("⌛ Expired")
    assert answers == ["Card #1 expired at 2026-11-03 09:00 UTC: nobody decided it in time."]


async def test_a_click_in_a_channel_that_became_read_only_changes_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    before = await start_harness(tmp_path, fake_ollama, clock, ButtonsAdapter())
    card = await card_for(before)
    await before.bot.stop()
    # A restart between posting the card and the click: the button still decides.
    after = await start_harness(
        tmp_path, fake_ollama, clock, before.adapter, bot={"read_only_channels": [str(CHANNEL)]}
    )
    try:
        await click(after, card)
        assert not await saved(after)
        assert "read-only" in card.current
    finally:
        await after.bot.stop()


async def test_a_click_after_a_restart_decides(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    before = await start_harness(tmp_path, fake_ollama, clock, ButtonsAdapter())
    card = await card_for(before)
    await before.bot.stop()
    after = await start_harness(tmp_path, fake_ollama, clock, before.adapter)
    try:
        await click(after, card)
        assert await saved(after)
    finally:
        await after.bot.stop()


async def test_typed_approve_and_decline_decide_and_answer(h: Harness) -> None:
    first = await card_for(h)
    second = await card_for(h, "deploys are on friday")
    command, answers = h.adapter.slash("approve 1")
    await h.send(command)
    assert answers == ["Card #1 is approved."] and await saved(h)
    assert first.buttons == []
    command, answers = h.adapter.slash("decline #2", user="UADMIN")
    await h.send(command)
    assert answers == ["Card #2 is declined."] and not await saved(h, "deploys")
    assert second.current.startswith("❌ Discarded")
    command, answers = h.adapter.slash("approve 2")
    await h.send(command)
    assert answers == ["Card #2 was already declined by user:test/UADMIN at 2026-11-02 09:00 UTC."]


async def test_typed_decisions_tell_strangers_nothing_of_other_peoples_cards(
    h: Harness,
) -> None:
    card = await card_for(h)
    command, answers = h.adapter.slash("approve 1", user="UBOB", channel="C9")
    await h.send(command)
    assert answers == ["There is no card #1 you can decide."] and not await saved(h)
    await h.react(card, "❌")  # decided now: a stranger still learns nothing of it
    command, answers = h.adapter.slash("decline 1", user="UBOB", channel="C9")
    await h.send(command)
    assert answers == ["There is no card #1 you can decide."]
    command, answers = h.adapter.slash("approve 7")
    await h.send(command)
    assert answers == ["There is no card #7 you can decide."]


async def test_a_strangers_click_in_their_own_dm_decides_nothing(h: Harness) -> None:
    card = await card_for(h)
    event, answers = adapter(h).click(card, user="UBOB")
    in_dm = dataclasses.replace(
        event, conversation=ConversationRef(PLATFORM, "D-UBOB", is_dm=True, team_id="T1")
    )
    await h.send(in_dm)
    assert answers == [OTHER_CARD]  # no reminder of this card was sent there
    assert not await saved(h) and card.edits == []


async def test_a_click_turned_away_while_busy_is_told_to_the_clicker_alone(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, ButtonsAdapter(), bot={"queue_size": 1})
    try:
        card = await card_for(h)
        fake_ollama.delay(0.3)
        fake_ollama.reply("slow answer")
        await h.bot.dispatcher.submit(h.adapter.message("a slow question", channel="C2"))
        event, answers = adapter(h).click(card)
        await h.bot.dispatcher.submit(event)
        await h.bot.dispatcher.wait_idle()
    finally:
        await h.bot.stop()
    assert answers == [BUSY_REPLY]
    assert BUSY_REPLY not in h.adapter.replies and not card.edits


def test_a_button_value_reads_back_only_in_its_own_shape() -> None:
    assert read_value("lorebot:approve:0:" + "0" * 16) is None  # no proposal #0
    assert read_value("lorebot:APPROVE:1:" + "0" * 16) is None
    assert read_value("lorebot:approve:1:" + "0" * 15 + "g") is None
    assert read_value("lorebot:approve:1:" + "0" * 16 + "\n") is None
    found = read_value("lorebot:always:12:" + "a" * 16)
    assert found is not None and (found.emoji, found.proposal_id) == ("\u267e", 12)
