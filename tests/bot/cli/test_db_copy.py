"""`lorebot db copy --to postgresql://…`: a SQLite database used for real (notes, a DM's
private note, change sets and an import, cards decided and pending, conversation
history) moves to PostgreSQL with everything in it, and lorebot then shows the same
things from there; a target with data is refused unless --force; a copy killed halfway
leaves nothing, and the next one finishes without duplicates."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.settings import Settings
from bot.storage import open_memory
from tests.support.llama import free_port
from tests.support.paths import ROOT
from tests.support.postgres import PostgresServer

DM_ALICE = ["--as", "user:slack/UALICE"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fill(env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Use lorebot on SQLite as a person and an operator would."""
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", f"http://127.0.0.1:{free_port()}")  # no model
    add = ("notes", "add")
    assert run(capsys, *add, "channel:slack/C1", "staging-db", "staging DB is db-2")[0] == 0
    assert run(capsys, *add, "user:slack/UALICE", "editor", "prefers vim", "--private")[0] == 0
    assert run(capsys, *add, "channel:slack/C2", "lunch", "lunch at noon")[0] == 0
    assert run(capsys, "notes", "forget", "channel:slack/C2", "lunch")[0] == 0
    lines = [
        {"scope": "channel:slack/C1", "topic": f"runbook-{n}", "summary": f"step {n}"}
        for n in range(30)
    ]
    (env / "notes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run(capsys, "notes", "import", str(env / "notes.jsonl"))[0] == 0
    monkeypatch.setattr(
        "sys.stdin", io.StringIO("remember that A is 1\nremember that B is 2\nhello\n")
    )
    assert main(["chat", "--user", "bob"]) == 0
    assert run(capsys, "proposals", "approve", "1")[0] == 0
    asyncio.run(_remind(2))  # card #2 waits: someone was reminded of it by DM
    capsys.readouterr()


async def _remind(proposal_id: int) -> None:
    memory = await open_memory(Settings())
    try:
        await memory.proposals.record_reminder(proposal_id, "D-bob", "m-reminder")
    finally:
        await memory.close()


SHOWN = (
    ("notes", "list"),
    ("notes", "history", "-n", "100", "--json"),
    ("notes", "search", "staging vim runbook", *DM_ALICE),
    ("notes", "search", "vim", *DM_ALICE, "--in", "channel:slack/C1"),
    ("proposals", "list", "--all"),
)


def shown(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [run(capsys, *argv)[1] for argv in SHOWN]


def test_a_copy_moves_everything_and_lorebot_shows_the_same_from_postgresql(
    env: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(env, monkeypatch, capsys)
    on_sqlite = shown(capsys)

    code, out, err = run(capsys, "db", "copy", "--to", pg_url)

    assert code == 0, err
    counts = {line.split()[1]: line for line in out.splitlines() if line.startswith("  ✓")}
    assert "33 in SQLite" in counts["notes"] and "33 in PostgreSQL" in counts["notes"]
    assert "2 in SQLite" in counts["proposals"]
    assert "1 in PostgreSQL" in counts["card_reminders"]
    assert "every table holds as many rows as in SQLite" in out
    assert not [line for line in out.splitlines() if line.startswith("  ✗")]
    monkeypatch.setenv("LOREBOT_DATABASE__URL", pg_url)
    assert shown(capsys) == on_sqlite
    # The copy goes on where SQLite left off: new ids follow the copied ones.
    assert run(capsys, "notes", "add", "channel:slack/C1", "new-one", "after the copy")[0] == 0
    _, history, _ = run(capsys, "notes", "history", "-n", "1")
    assert "new-one" in history
    assert run(capsys, "proposals", "approve", "2")[0] == 0


def test_a_target_with_data_is_refused_unless_forced(
    env: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(env, monkeypatch, capsys)
    monkeypatch.setenv("LOREBOT_DATABASE__URL", pg_url)
    assert run(capsys, "notes", "add", "channel:slack/C9", "already", "here")[0] == 0
    monkeypatch.delenv("LOREBOT_DATABASE__URL")

    code, _, err = run(capsys, "db", "copy", "--to", pg_url)
    assert code == 1 and "holds lorebot data already (1 notes, 1 note_changes)" in err
    assert "--force" in err
    monkeypatch.setenv("LOREBOT_DATABASE__URL", pg_url)
    assert "already" in run(capsys, "notes", "list")[1]
    monkeypatch.delenv("LOREBOT_DATABASE__URL")

    assert run(capsys, "db", "copy", "--to", pg_url, "--force")[0] == 0
    monkeypatch.setenv("LOREBOT_DATABASE__URL", pg_url)
    listed = run(capsys, "notes", "list")[1]
    assert "already" not in listed and "staging-db" in listed


def test_a_target_that_is_not_postgresql_is_refused(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "db", "copy", "--to", str(env / "other.db"))
    assert code == 1 and "--to takes a postgresql:// URL" in err


async def test_a_copy_killed_halfway_leaves_nothing_and_the_next_one_finishes(
    env: Path, pg_url: str, postgres_server: PostgresServer
) -> None:
    notes = env / "many.jsonl"
    with notes.open("w") as out:
        for n in range(60_000):
            summary = f"fact number {n}"
            note = {"scope": f"channel:slack/C{n % 50}", "topic": f"t-{n}", "summary": summary}
            out.write(json.dumps(note) + "\n")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    lorebot = [sys.executable, "-m", "bot.cli.main"]
    imported = await asyncio.create_subprocess_exec(
        *lorebot,
        "notes",
        "import",
        str(notes),
        env=environment,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert await imported.wait() == 0

    copy = await asyncio.create_subprocess_exec(
        *lorebot,
        "db",
        "copy",
        "--to",
        pg_url,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert copy.stderr is not None
    line = await asyncio.wait_for(copy.stderr.readline(), 120)
    assert line.startswith(b"  notes: 5,000 rows"), line  # halfway through the notes
    copy.send_signal(signal.SIGKILL)
    await copy.wait()

    database = pg_url.rsplit("/", 1)[1]
    assert postgres_server.sql("SELECT count(*) FROM notes", database) == "0"
    again = await asyncio.create_subprocess_exec(
        *lorebot,
        "db",
        "copy",
        "--to",
        pg_url,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await again.communicate()
    assert again.returncode == 0 and b"every table holds as many rows" in out
    assert postgres_server.sql("SELECT count(*) FROM notes", database) == "60000"
    assert (
        postgres_server.sql(
            "SELECT count(*) FROM (SELECT scope, topic FROM notes GROUP BY 1, 2) AS once", database
        )
        == "60000"
    )
