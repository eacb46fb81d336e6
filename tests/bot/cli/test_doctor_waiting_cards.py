"""`lorebot doctor` counts the cards that have waited over a day for a decision."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.settings import Settings
from bot.storage import open_memory
from memory.clock import utc_now


async def test_doctor_counts_cards_waiting_over_a_day(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # no model
    monkeypatch.setenv("LOREBOT_BOT__PROPOSAL_TTL_HOURS", "72")
    monkeypatch.setattr("sys.stdin", io.StringIO("remember that A is 1\n"))
    assert await asyncio.to_thread(main, ["chat", "--user", "bob"]) == 0  # card #1, now
    capsys.readouterr()
    await asyncio.to_thread(main, ["doctor"])
    assert "✓ waiting cards: none has waited over a day" in capsys.readouterr().out

    # Two cards posted two days ago, one of them decided since.
    settings = Settings()
    old = await open_memory(settings, clock=lambda: utc_now() - timedelta(days=2))
    for topic in ("b", "c"):
        await old.proposals.create(
            "note_save",
            requester="user:console/bob",
            platform="console",
            conversation={"platform": "console", "channel_id": "bob"},
            payload={"scope": "channel:console/bob", "topic": topic},
            ttl=timedelta(days=3),
        )
    await old.proposals.decide(3, approve=False, decided_by="user:console/bob")
    await old.close()
    await asyncio.to_thread(main, ["doctor"])
    out = capsys.readouterr().out
    assert "✓ waiting cards: 1 waited over a day for a decision" in out
