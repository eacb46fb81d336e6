"""One-shot commands close what they open: the process ends as soon as the command is done
(an open database connection keeps a thread that would hold it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def lorebot(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`lorebot ARGV` as a process of its own; a test failure when it does not end."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", *argv], input=stdin,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"`lorebot {' '.join(argv)}` did not exit")


def test_one_shot_commands_exit_once_done(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # nothing listens there
    chat = lorebot("chat", "--user", "bob", stdin="remember that A is 1\n")
    assert chat.returncode == 0, chat.stderr

    approve = lorebot("proposals", "approve", "1")
    assert approve.returncode == 0 and approve.stdout.startswith("✅ Saved"), approve.stderr
    for argv in (["proposals", "list", "--all"], ["actions", "list"], ["notes", "list"]):
        done = lorebot(*argv)
        assert done.returncode == 0, done.stderr
    assert lorebot("proposals", "approve", "1").returncode == 1  # decided already
