"""Approve / Decline on Discord cards: message components out, INTERACTION_CREATE (type 3)
in through the fake gateway, acknowledged and answered through the interaction callback
endpoints, and decided by a reaction's rules, on cards posted before a restart too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.base import APPROVE, REJECT
from bot.daemon.app import Bot
from tests.fakes.discord import (
    ALICE,
    BOT,
    MALLORY,
    FakeDiscord,
    Posted,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.discord import ALICE_SCOPE, Running, adapter_for, mention
from tests.support.harness import make_settings

DEFERRED_UPDATE = 6  # a component's acknowledgement that leaves its message as it is
EPHEMERAL = 64


async def start(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> Running:
    adapter = adapter_for(fake_discord)
    bot = Bot(make_settings(tmp_path / "bot.db", fake_ollama.url), [adapter], clock=clock)
    await bot.start()
    return Running(bot, adapter, fake_discord, fake_ollama)


@pytest.fixture
async def running(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Running]:
    run = await start(tmp_path, fake_discord, fake_ollama, clock)
    try:
        yield run
    finally:
        await run.bot.stop()


async def dm_card(running: Running) -> Posted:
    running.ollama.reply(json.dumps({"topic": "staging-db", "summary": "staging is pg-2"}))
    await running.discord.send_message("remember that the staging DB is pg-2.internal", dm=True)
    card = (await running.discord.wait_for_posts(1))[0]
    await running.discord.wait_until(lambda: len(card.reactions) == 2)
    return card


async def guild_card(running: Running) -> Posted:
    running.ollama.reply(json.dumps({"topic": "deploy-day", "summary": "deploys on tuesday"}))
    await running.discord.send_message(
        f"{mention(BOT.id)} remember that deploys happen on tuesdays", mentions=[BOT]
    )
    card = (await running.discord.wait_for_posts(1))[0]
    await running.discord.wait_until(lambda: len(card.reactions) == 2)
    return card


async def click(running: Running, card: Posted, label: str, **kw: object) -> int:
    """Click, wait until lorebot handled it; the interaction's id."""
    payload = await running.discord.click(card, label, **kw)  # type: ignore[arg-type]
    interaction = int(payload["id"])
    await running.discord.wait_until(
        lambda: any(c.interaction_id == interaction for c in running.discord.callbacks)
    )
    await running.bot.dispatcher.wait_idle()
    return interaction


async def test_a_card_has_buttons_beside_its_reactions(running: Running) -> None:
    card = await dm_card(running)
    assert [(b["label"], b["style"]) for b in card.buttons] == [("Approve", 3), ("Decline", 4)]
    assert all(b["custom_id"].startswith("lorebot:") for b in card.buttons)
    assert card.reactions == [APPROVE, REJECT]


async def test_the_requesters_click_saves_and_the_buttons_go(running: Running) -> None:
    card = await dm_card(running)
    interaction = await click(running, card, "Approve", user=ALICE, dm=True)
    await running.discord.wait_until(lambda: card.edits)
    assert await running.bot.notes.fetch(ALICE_SCOPE, "staging-db") is not None
    assert card.current.startswith("✅ Saved `staging-db`")
    assert card.buttons == []  # the edit took them away
    [callback] = [c for c in running.discord.callbacks if c.interaction_id == interaction]
    assert callback.type == DEFERRED_UPDATE
    assert running.discord.followups == []


async def test_someone_elses_click_is_answered_to_them_alone(running: Running) -> None:
    card = await guild_card(running)
    interaction = await click(running, card, "Approve", user=MALLORY)
    [answer] = await running.discord.wait_until(lambda: running.discord.followups)
    assert answer.interaction_id == interaction and answer.flags == EPHEMERAL
    assert answer.content.startswith("Only the person who asked")
    assert await running.bot.notes.list_notes() == [] and card.edits == []
    await click(running, card, "Approve", user=ALICE)  # the requester may
    await running.discord.wait_until(lambda: card.edits)
    assert len(await running.bot.notes.list_notes()) == 1


async def test_a_click_on_a_card_posted_before_a_restart_decides(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    before = await start(tmp_path, fake_discord, fake_ollama, clock)
    card = await dm_card(before)
    await before.bot.stop()
    after = await start(tmp_path, fake_discord, fake_ollama, clock)
    try:
        await click(after, card, "Decline", user=ALICE, dm=True)
        await fake_discord.wait_until(lambda: card.edits)
        assert card.current.startswith("❌ Discarded") and card.buttons == []
        assert await after.bot.notes.list_notes() == []
    finally:
        await after.bot.stop()


async def test_a_typed_approve_decides_and_answers(running: Running) -> None:
    card = await dm_card(running)
    await running.discord.slash_command("approve", dm=True, card=1)
    answer = await running.discord.wait_until(lambda: running.discord.followups)
    await running.discord.wait_until(lambda: card.edits)
    assert [a.content for a in answer] == ["Card #1 is approved."]
    assert await running.bot.notes.fetch(ALICE_SCOPE, "staging-db") is not None
