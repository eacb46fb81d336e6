"""`lorebot jobs run digest`: every configured digest, or the one `--scope` names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.cli.main import main

OPS = "channel:console/ops"
DEV = "channel:console/dev"
NOWHERE = "http://127.0.0.1:9"  # nothing listens there: digests go out without a summary


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def two_digests(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A config with a digest in #ops and one in #dev, and a new note in each channel."""
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", NOWHERE)
    config = env / "config.toml"
    config.write_text(
        "[jobs]\n"
        f'digests = [{{ channel = "{OPS}", cron = "0 9 * * *" }}, '
        f'{{ channel = "{DEV}", cron = "0 10 * * *" }}]\n'
    )
    for scope, topic in ((OPS, "ops-oncall"), (DEV, "dev-freeze")):
        assert run_cli(capsys, "notes", "add", scope, topic, f"{topic} is new")[0] == 0
    return config


def run_lines(out: str) -> list[str]:
    """The `JOB SCOPE PERIOD STATUS: DETAIL` lines of `jobs run`, without the period."""
    return [re.sub(r" \S+Z ", " ", line) for line in out.splitlines() if line.startswith("digest ")]


def test_without_scope_every_configured_digest_is_posted(
    two_digests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "--config", str(two_digests), "jobs", "run", "digest")
    assert code == 0
    assert run_lines(out) == [
        f"digest {OPS} succeeded: posted 1 lines",
        f"digest {DEV} succeeded: posted 1 lines",
    ]
    assert "• new: `ops-oncall` — ops-oncall is new" in out
    assert "• new: `dev-freeze` — dev-freeze is new" in out


def test_with_scope_only_that_digest_and_only_a_configured_one(
    two_digests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ["--config", str(two_digests)]
    code, out, _ = run_cli(capsys, *config, "jobs", "run", "digest", "--scope", DEV)
    assert code == 0 and run_lines(out) == [f"digest {DEV} succeeded: posted 1 lines"]
    assert "ops-oncall" not in out

    for scope in ("channel:console/elsewhere", "not-a-scope"):
        code, out, err = run_cli(capsys, *config, "jobs", "run", "digest", "--scope", scope)
        assert (code, out) == (1, "")
        assert err == (
            f"lorebot: no digest is configured for {scope} in jobs.digests "
            f"(configured: {OPS}, {DEV})\n"
        )
    _, out, _ = run_cli(capsys, *config, "jobs", "list")
    assert "elsewhere" not in out and "not-a-scope" not in out
