"""Cards in the web console: the cards a person may decide, with Approve and Decline, which
take a button's path (the same hash, the same rules, once across the ways to decide)."""

from __future__ import annotations

import re

import pytest

from memory import Scope
from tests.fakes.adapter import Sent
from tests.support.console import Browser, ConsoleHarness

pytestmark = pytest.mark.usefixtures("on_each_engine")

CHANNEL = Scope.parse("channel:test/C1")


async def card_for(console: ConsoleHarness, fact: str = "standup is at 10") -> Sent:
    console.h.script_title(fact.split()[0], fact)
    await console.h.say(f"remember that {fact}")
    return console.h.adapter.cards[-1]


def card_hash(page_text: str, card_id: int) -> str:
    found = re.search(
        rf'action="/cards/{card_id}/decide".*?name="hash" value="([0-9a-f]+)"', page_text, re.S
    )
    assert found, page_text
    return found.group(1)


async def decide(browser: Browser, card_id: int, decision: str = "approve") -> tuple[int, str]:
    cards = await browser.get("/cards")
    page = await browser.post(
        f"/cards/{card_id}/decide",
        {"decision": decision, "hash": card_hash(cards.text, card_id)},
        csrf=cards.csrf,
    )
    return page.status, page.text


async def test_the_requester_approves_a_waiting_card_and_the_card_says_so(
    console: ConsoleHarness,
) -> None:
    card = await card_for(console)
    alice = await console.signed_in("user:test/UALICE")
    page = await alice.get("/cards")
    assert "#1" in page.text and "standup" in page.text and ">Approve<" in page.text

    status, text = await decide(alice, 1)
    assert status == 200 and "approved by user:test/UALICE" in text
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is not None
    assert card.current.startswith("✅ Saved `standup`")  # the card in the chat, edited
    assert card.current.endswith("Decided by user:test/UALICE at 2026-11-02 09:00 UTC.")


async def test_decline_closes_the_card_and_saves_nothing(console: ConsoleHarness) -> None:
    card = await card_for(console)
    alice = await console.signed_in("user:test/UALICE")
    status, text = await decide(alice, 1, "decline")
    assert status == 200 and "rejected" in text
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is None
    assert card.current.startswith("❌")


async def test_a_second_decision_on_a_decided_card_is_a_conflict(console: ConsoleHarness) -> None:
    card = await card_for(console)
    alice = await console.signed_in("user:test/UALICE")
    cards = await alice.get("/cards")
    shown = card_hash(cards.text, 1)
    await console.h.react(card, "✅")  # decided in the chat meanwhile
    page = await alice.post(
        "/cards/1/decide", {"decision": "decline", "hash": shown}, csrf=cards.csrf
    )
    assert page.status == 409 and "already approved by user:test/UALICE" in page.text
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is not None


async def test_a_stranger_neither_sees_nor_decides_another_persons_card(
    console: ConsoleHarness,
) -> None:
    await card_for(console)
    alice_cards = await (await console.signed_in("user:test/UALICE")).get("/cards")
    bob = await console.signed_in("user:test/UBOB")
    page = await bob.get("/cards")
    assert "standup" not in page.text
    assert (await bob.get("/cards/1")).status == 404
    page = await bob.post(
        "/cards/1/decide",
        {"decision": "approve", "hash": card_hash(alice_cards.text, 1)},
        csrf=page.csrf,
    )
    assert page.status == 404 and "There is no card #1 you can decide." in page.text
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is None


async def test_a_card_changed_since_the_page_showed_it_is_not_decided(
    console: ConsoleHarness,
) -> None:
    await card_for(console)
    alice = await console.signed_in("user:test/UALICE")
    cards = await alice.get("/cards")
    page = await alice.post(
        "/cards/1/decide", {"decision": "approve", "hash": "0" * 16}, csrf=cards.csrf
    )
    assert page.status == 409 and "changed since it was posted" in page.text
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is None


async def test_an_admin_decides_any_card(console: ConsoleHarness) -> None:
    await card_for(console)
    admin = await console.signed_in("user:test/UADMIN")
    status, text = await decide(admin, 1)
    assert status == 200 and "approved by user:test/UADMIN" in text
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is not None


async def test_a_decision_without_the_form_token_changes_nothing(console: ConsoleHarness) -> None:
    await card_for(console)
    alice = await console.signed_in("user:test/UALICE")
    cards = await alice.get("/cards")
    page = await alice.post(
        "/cards/1/decide", {"decision": "approve", "hash": card_hash(cards.text, 1)}, csrf=""
    )
    assert page.status == 403
    assert await console.h.bot.notes.fetch(CHANNEL, "standup") is None
