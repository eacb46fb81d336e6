"""A person at a shell on a fresh machine: a HOME of their own without any lorebot files,
no `LOREBOT_`, XDG or systemd variables, and a working folder of their own. `lorebot`
runs as a subprocess (`run`) or in-process through its entry point (`main`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.support.paths import ROOT

CLEARED = ("LOREBOT_", "XDG_", "STATE_DIRECTORY", "OLLAMA_HOST", "NOTIFY_SOCKET", "WATCHDOG_")


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


@dataclass
class Shell:
    root: Path
    home: Path
    cwd: Path
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch
    env: dict[str, str] = field(default_factory=dict)

    def setenv(self, name: str, value: str) -> None:
        """Export a variable, for the subprocess and the in-process runs alike."""
        self.env[name] = value
        self.monkeypatch.setenv(name, value)

    def run(self, *argv: str) -> Result:
        """`lorebot ARGV` as a subprocess in the working folder."""
        done = subprocess.run(
            [sys.executable, "-m", "bot.cli.main", *argv],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def main(self, *argv: str) -> Result:
        """`lorebot ARGV` through `bot.cli.main.main` in this process."""
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return Result(code, out, err)

    def files(self) -> set[Path]:
        """Every file and folder under this test's folders."""
        return set(self.root.rglob("*"))


@pytest.fixture
def shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Shell]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    for key in list(os.environ):
        if key.startswith(CLEARED):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    system_config = tmp_path / "etc" / "lorebot" / "config.toml"
    monkeypatch.setattr("bot.config.paths.SYSTEM_CONFIG", system_config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    yield Shell(tmp_path, home, work, capsys, monkeypatch, env)
