"""Secrets a skill script is given through `skills.script_env` (`${NAME}` of lorebot's
environment) are treated like the other configured secrets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.daemon.logs import configure_logging
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import make_settings
from tests.support.scripts import _run, _start

SECRET = "plain-words-no-shape-a-scanner-knows"


def test_a_script_env_secret_never_reaches_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEPLOY_KEY", SECRET)
    settings = make_settings(
        tmp_path / "bot.db", "http://127.0.0.1:9", skills={"script_env": {"KEY": "${DEPLOY_KEY}"}}
    )
    root = logging.getLogger()
    kept = root.handlers[:], root.level
    try:
        configure_logging(logging.INFO, "text", settings.secrets())
        logging.getLogger("bot.tools.scripts").warning("the script said %s", SECRET)
    finally:
        root.handlers[:], root.level = kept
    logged = capsys.readouterr().err
    assert "the script said" in logged and SECRET not in logged


async def test_a_missing_variable_names_the_script_setting_and_runs_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEPLOY_KEY", raising=False)
    h = await _start(tmp_path, fake_ollama, clock, "host", script_env={"KEY": "${DEPLOY_KEY}"})
    try:
        told = await _run(h, code="open('ran', 'w').write('yes')\n")
        assert "${DEPLOY_KEY} is used in the skills.script_env setting" in told
        assert "DEPLOY_KEY is not set" in told and "mcp" not in told
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "error" and "not run" in action.output
    finally:
        await h.bot.stop()
