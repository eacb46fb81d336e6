"""Proposals at their edges, as an admin or a person meets them: the whole list from the
shell, and a ✅ on a card that was decided already in a channel that became read-only."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.base import APPROVE, REJECT
from bot.cli.main import main
from memory import Scope
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

CHANNEL = Scope.parse("channel:test/C1")


async def run_cli(argv: list[str]) -> int:
    """The real entry point, in a thread: it owns its own event loop."""
    return await asyncio.to_thread(main, argv)


async def test_proposals_list_shows_pending_ones_and_all_with_all(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # no model
    monkeypatch.setattr("sys.stdin", io.StringIO("remember that A is 1\nremember that B is 2\n"))
    assert await run_cli(["chat", "--user", "bob"]) == 0
    assert await run_cli(["proposals", "approve", "1"]) == 0
    capsys.readouterr()

    assert await run_cli(["proposals", "list"]) == 0
    pending = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in pending] == [["#2", "pending"]]

    assert await run_cli(["proposals", "list", "--all"]) == 0
    everything = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in everything] == [["#2", "pending"], ["#1", "approved"]]


@pytest.fixture
async def decided_then_read_only(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Harness]:
    """A card in C1 rejected, then the bot restarted with C1 read-only."""
    before = await start_harness(tmp_path, fake_ollama, clock)
    before.script_title("standup", "standup at 10")
    await before.say("remember that standup is at 10")
    await before.react(before.adapter.cards[-1], REJECT)
    await before.bot.stop()
    after = await start_harness(
        tmp_path, fake_ollama, clock, before.adapter, bot={"read_only_channels": [str(CHANNEL)]}
    )
    try:
        yield after
    finally:
        await after.bot.stop()


async def test_approving_a_decided_card_in_a_read_only_channel_changes_nothing(
    decided_then_read_only: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = decided_then_read_only
    caplog.set_level(logging.INFO, logger="bot.core")
    card = h.adapter.cards[-1]
    replies = list(h.adapter.replies)
    await h.react(card, APPROVE)
    assert h.adapter.replies == replies  # no apology, no error
    assert card.current.startswith("❌ Discarded")
    assert await h.bot.notes.fetch(CHANNEL, "standup") is None
    outcome = caplog.records[-1].getMessage().rpartition("outcome=")[2]
    assert outcome == "closed proposal (proposal 1 was already rejected)"
