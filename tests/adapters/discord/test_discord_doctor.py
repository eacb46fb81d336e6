"""`lorebot doctor` against the fake Discord: the token and the Message Content intent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.fakes.discord import TOKEN, FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.ollama import FakeOllama


async def doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = await asyncio.to_thread(main, ["doctor"])
    return code, capsys.readouterr().out


async def test_doctor_checks_discord(
    env: Path,
    fake_ollama: FakeOllama,
    fake_discord: FakeDiscord,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    monkeypatch.setenv("LOREBOT_DISCORD__TOKEN", TOKEN)
    monkeypatch.setenv("LOREBOT_DISCORD__API_BASE_URL", fake_discord.api_base_url)
    code, out = await doctor(capsys)
    assert code == 0, out
    assert "✓ discord: signed in as" in out and "✓ discord intents: Message Content" in out

    fake_discord.application_flags = 0
    code, out = await doctor(capsys)
    assert code == 1 and "✗ discord intents: Message Content is disabled" in out
    assert "Privileged Gateway Intents" in out

    monkeypatch.setenv("LOREBOT_DISCORD__TOKEN", "MTIz.wrong.token-value-for-test")
    code, out = await doctor(capsys)
    assert code == 1 and "✗ discord: Discord rejected the bot token" in out
    assert "wrong.token-value" not in out
