"""One-shot commands close what they open: the process ends as soon as the command is done
(an open database connection keeps a thread that would hold it), and a file checked for
`lorebot restore` is not left open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.backup import _check_backup
from bot.errors import UserError
from tests.support.paths import ROOT


def lorebot(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`lorebot ARGV` as a process of its own; a test failure when it does not end."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "bot.cli.main", *argv],
            input=stdin,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
        )
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


def open_files() -> set[str]:
    fds = Path("/proc/self/fd")
    return {os.readlink(fd) for fd in fds.iterdir() if fd.exists()}


def test_a_file_that_is_not_a_backup_is_closed_once_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all" * 50)

    with pytest.raises(UserError, match="not a lorebot database") as refused:
        _check_backup(junk)

    assert refused.traceback  # still held, and with it what the check left behind
    assert str(junk) not in open_files()
