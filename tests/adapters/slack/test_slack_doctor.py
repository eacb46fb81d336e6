"""`lorebot doctor` against the fake Slack: token, scopes and Socket Mode checked for real."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401


async def doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = await asyncio.to_thread(main, ["doctor"])
    return code, capsys.readouterr().out


async def test_doctor_checks_slack(
    env: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    monkeypatch.setenv("LOREBOT_SLACK__BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("LOREBOT_SLACK__APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("LOREBOT_SLACK__API_BASE_URL", fake_slack.api_url)
    code, out = await doctor(capsys)
    assert code == 0, out
    assert "✓ slack: signed in as @" in out and "✓ slack scopes" in out
    assert "✓ slack socket mode" in out
    assert "✓ slack buttons: cards show Approve/Decline buttons once Interactivity is on" in out
    monkeypatch.setenv("LOREBOT_SLACK__BUTTONS", "false")
    code, out = await doctor(capsys)
    assert "✓ slack buttons: off (slack.buttons = false)" in out
    monkeypatch.delenv("LOREBOT_SLACK__BUTTONS")

    fake_slack.scopes = "chat:write"
    code, out = await doctor(capsys)
    assert code == 1 and "✗ slack scopes: missing app_mentions:read" in out
    assert "reinstall the app" in out

    monkeypatch.setenv("LOREBOT_SLACK__BOT_TOKEN", "xoxb-wrong-token-value")
    code, out = await doctor(capsys)
    assert code == 1 and "✗ slack: the bot token was refused (invalid_auth)" in out
    assert "xoxb-wrong-token-value" not in out
