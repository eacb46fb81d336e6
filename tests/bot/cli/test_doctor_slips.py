"""`lorebot doctor` counts the model's slips of the last day, from what turns recorded."""

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
from tests.fakes.ollama import FakeOllama


async def test_doctor_counts_the_slips_of_the_last_day(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    monkeypatch.setattr("sys.stdin", io.StringIO("which VPN gateway?\nand the proxy?\n"))
    fake_ollama.reply("")  # empty, then empty again: answered from memory
    fake_ollama.reply("")
    fake_ollama.reply("Let me search my notes.")  # announced, not called: nudged
    fake_ollama.reply("The proxy is on host-7.")
    assert await asyncio.to_thread(main, ["chat", "--user", "alice"]) == 0
    # A slip of two days ago is not of the last day.
    settings = Settings()
    old = await open_memory(settings, clock=lambda: utc_now() - timedelta(days=2))
    await old.slips.record("repeated call", "console/alice/")
    await old.close()
    capsys.readouterr()

    await asyncio.to_thread(main, ["doctor"])
    out = capsys.readouterr().out
    assert "✓ model slips: in the last day: empty 1, empty twice 1, intent 1 (" in out


def test_doctor_says_when_the_model_did_not_slip(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")
    main(["notes", "add", "channel:console/ops", "kept", "a database now exists"])
    capsys.readouterr()
    main(["doctor"])
    assert "✓ model slips: none in the last day" in capsys.readouterr().out
