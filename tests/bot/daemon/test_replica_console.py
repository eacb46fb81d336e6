"""The web console at two replicas on one PostgreSQL database: a session begun at one is
good at the other, and a card posted by one is decided from the other's console, once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import Scope
from tests.fakes.ollama import FakeOllama
from tests.support.console import Browser, ConsoleHarness
from tests.support.harness import Harness
from tests.support.replica_pair import two_replicas

CHANNEL = Scope.parse("channel:test/C1")


@pytest.fixture
async def two(
    tmp_path: Path, fake_ollama: FakeOllama, pg_url: str
) -> AsyncIterator[tuple[ConsoleHarness, ConsoleHarness]]:
    console = {"enabled": True, "listen": "127.0.0.1:0"}
    async with two_replicas(tmp_path, fake_ollama, pg_url, console=console) as bots:
        consoles = []
        for bot in bots:
            assert bot.console is not None
            adapter = bot.adapters["test"]
            harness = Harness(bot, adapter, fake_ollama, None)  # type: ignore[arg-type]
            consoles.append(ConsoleHarness(harness, f"http://127.0.0.1:{bot.console.port}"))
        try:
            yield consoles[0], consoles[1]
        finally:
            for one in consoles:
                await one.close()


async def test_a_card_posted_at_one_replica_is_decided_in_the_others_console(
    two: tuple[ConsoleHarness, ConsoleHarness], fake_ollama: FakeOllama
) -> None:
    poster, other = two
    fake_ollama.reply(json.dumps({"topic": "standup", "summary": "standup at 10"}))
    await poster.h.say("remember that standup is at 10")
    [card] = poster.h.adapter.cards

    # Signed in at the poster; the same browser's cookie, sent to the other replica.
    alice = await poster.signed_in("user:test/UALICE")
    at_other = Browser(other.base, alice.session)
    cards = await at_other.get("/cards")
    assert cards.status == 200 and "user:test/UALICE" in cards.text
    shown = cards.text.split('name="hash" value="')[1].split('"')[0]
    page = await at_other.post(
        "/cards/1/decide", {"decision": "approve", "hash": shown}, csrf=cards.csrf
    )
    assert page.status == 200 and "approved by user:test/UALICE" in page.text
    assert await poster.h.bot.notes.fetch(CHANNEL, "standup") is not None
    assert card.current.startswith("✅ Saved") and len(card.edits) == 1
