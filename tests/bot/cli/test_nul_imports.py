"""A NUL character (U+0000) in what the command line brings in: `notes import` and
`history import` keep it as U+FFFD on both engines (docs/memory.md), and `db copy` of a
SQLite database an earlier lorebot filled with NULs finishes, its text shown the same."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from bot.cli.common import cli_actor
from memory import Scope
from memory.policy.visibility import Visibility
from memory.stores.stores import StoreOptions
from tests.support.engines import open_engine
from tests.support.history import run, search

C1 = Scope.parse("channel:slack/C1")
IN_GENERAL = ("--as", "user:slack/U04PRIYA", "--in", "channel:slack/C0GENERAL")


def _note_shown(capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run(capsys, "notes", "show", str(C1), "build-id")
    assert code == 0, err
    return out


def _history_jsonl(path: Path, text: str) -> Path:
    line = {
        "conversation": "channel:slack/C0GENERAL",
        "author": "Priya",
        "author_id": "U04PRIYA",
        "timestamp": "2026-10-02T14:03:00Z",
        "text": text,
    }
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def test_notes_import_keeps_a_nul_as_u_fffd_and_again_changes_nothing(
    env: Path, cli_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = env / "notes.jsonl"
    note = {
        "scope": str(C1),
        "topic": "build-id",
        "summary": "build id a\x00b",
        "body": "the id is a\x00b\x00",
        "author": "ci\x00bot",
    }
    path.write_text(json.dumps(note) + "\n", encoding="utf-8")

    code, out, err = run(capsys, "notes", "import", str(path))
    assert code == 0, err
    assert "1 new" in out
    shown = _note_shown(capsys)
    assert "summary: build id a\ufffdb" in shown and "the id is a\ufffdb\ufffd" in shown
    assert "author: ci\ufffdbot" in shown and "\x00" not in shown
    code, out, _ = run(capsys, "notes", "import", str(path))
    assert code == 0 and "0 new, 0 updated, 1 unchanged" in out
    code, _, err = run(capsys, "notes", "undo")
    assert code == 0, err
    assert run(capsys, "notes", "show", str(C1), "build-id")[0] == 1


def test_history_import_keeps_a_nul_as_u_fffd(
    env: Path, cli_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _history_jsonl(env / "history.jsonl", "the deploy freeze starts\x00 on the 14th")
    code, out, err = run(capsys, "history", "import", str(path))
    assert code == 0, err
    assert "imported 1 new messages" in out
    hits = search(capsys, "deploy freeze", *IN_GENERAL)
    assert [h["content"] for h in hits] == ["the deploy freeze starts\ufffd on the 14th"]


async def test_a_copy_of_sqlite_holding_nuls_finishes_and_shows_them_as_u_fffd(
    env: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(*argv: str) -> tuple[int, str, str]:
        return run(capsys, *argv)

    add = ("notes", "add", str(C1), "build-id", "build id MARK", "--body", "the id is MARK")
    assert (await asyncio.to_thread(cli, *add))[0] == 0
    path = _history_jsonl(env / "history.jsonl", "the deploy freeze starts MARK on the 14th")
    assert (await asyncio.to_thread(cli, "history", "import", str(path)))[0] == 0
    # What an earlier lorebot kept on SQLite: NULs in text, their escapes in JSON.
    with sqlite3.connect(env / "cli.db") as conn:
        conn.execute(
            "UPDATE notes SET summary = replace(summary, 'MARK', char(0)), "
            "body = replace(body, 'MARK', char(0))"
        )
        conn.execute(r"UPDATE note_changes SET after_json = replace(after_json, 'MARK', '\u0000')")
        conn.execute("UPDATE messages SET content = replace(content, 'MARK', char(0))")
    conn.close()

    code, out, err = await asyncio.to_thread(cli, "db", "copy", "--to", pg_url)
    assert code == 0, err
    assert "every table holds as many rows as in SQLite" in out

    monkeypatch.setenv("LOREBOT_DATABASE__URL", pg_url)
    shown = await asyncio.to_thread(_note_shown, capsys)
    assert "summary: build id \ufffd" in shown and "the id is \ufffd" in shown
    hits = await asyncio.to_thread(search, capsys, "deploy freeze", *IN_GENERAL)
    assert [h["content"] for h in hits] == ["the deploy freeze starts \ufffd on the 14th"]
    code, out, _ = await asyncio.to_thread(cli, "notes", "history", "--json")
    assert json.loads(out)[0]["summary_after"] == "build id \ufffd"
    # An undo in a channel reads the change set's JSON as jsonb on PostgreSQL.
    stores = await open_engine("postgresql", pg_url, StoreOptions())
    try:
        undone = await stores.notes.undo(cli_actor(), visibility=Visibility((), (C1,)))
        assert undone.before is not None and undone.before["summary"] == "build id \ufffd"
    finally:
        await stores.close()
