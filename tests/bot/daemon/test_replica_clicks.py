"""Button clicks at replicas on one PostgreSQL database: Slack gives a click to any
replica's connection, so a click reaching the replica that did not post the card decides
it, through the database, once; two clicks at two replicas at once decide it once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.daemon.app import Bot
from memory import Scope
from tests.fakes.adapter import ButtonsAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.replica_pair import two_replicas

CHANNEL = Scope.parse("channel:test/C1")


@pytest.fixture
async def two(
    tmp_path: Path, fake_ollama: FakeOllama, pg_url: str
) -> AsyncIterator[tuple[Bot, Bot]]:
    async with two_replicas(tmp_path, fake_ollama, pg_url) as bots:
        yield bots


def adapter(bot: Bot) -> ButtonsAdapter:
    found = bot.adapters["test"]
    assert isinstance(found, ButtonsAdapter)
    return found


async def card_at(bot: Bot, fake_ollama: FakeOllama) -> None:
    fake_ollama.reply(json.dumps({"topic": "standup", "summary": "standup at 10"}))
    await bot.dispatcher.submit(adapter(bot).message("remember that standup is at 10"))
    await bot.dispatcher.wait_idle()


async def test_a_click_at_the_replica_that_did_not_post_the_card_decides_it(
    two: tuple[Bot, Bot], fake_ollama: FakeOllama
) -> None:
    poster, other = two
    await card_at(poster, fake_ollama)
    [card] = adapter(poster).cards
    click, answers = adapter(other).click(card)
    await other.dispatcher.submit(click)
    await other.dispatcher.wait_idle()
    await poster.dispatcher.wait_idle()
    assert await poster.notes.fetch(CHANNEL, "standup") is not None
    assert card.current.startswith("✅ Saved") and card.buttons == [] and answers == []


async def test_clicks_at_two_replicas_at_once_decide_once(
    two: tuple[Bot, Bot], fake_ollama: FakeOllama
) -> None:
    a, b = two
    await card_at(a, fake_ollama)
    [card] = adapter(a).cards
    approve, approve_answers = adapter(a).click(card, "Approve")
    decline, decline_answers = adapter(b).click(card, "Decline", user="UADMIN")
    await asyncio.gather(a.dispatcher.submit(approve), b.dispatcher.submit(decline))
    for bot in two:
        await bot.dispatcher.wait_idle()
    for bot in two:  # an entry taken over by the other replica is handled there
        await bot.dispatcher.wait_idle()
    [proposal] = await a.proposals.fetch_recent()
    assert proposal.status in ("approved", "rejected")
    assert len(card.edits) == 1
    saved = await a.notes.fetch(CHANNEL, "standup") is not None
    assert saved == (proposal.status == "approved")
    # The loser is told who decided: through its click's answer when the replica that took
    # the click handled it, else privately by the one that did.
    private = [text for _, _, text in adapter(a).private + adapter(b).private]
    told = approve_answers + decline_answers + private
    assert len(told) == 1 and told[0].startswith("Card #1 was already")
