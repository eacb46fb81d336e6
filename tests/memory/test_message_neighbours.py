"""A past message is found by the message after it as well as the one before, also in a
database whose messages were indexed before the message after was (the upgrade rebuilds
the index), searched through `lorebot notes search --history`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from memory import Scope
from memory.policy.visibility import scope_keys
from memory.sqlite.migrations import MIGRATIONS

C1 = "channel:slack/C1"
THREAD = "slack/C1/1700000000.000100"
QUESTION = "which port does the gateway listen on?"
REPLY = "yep, 8443"
THANKS = "thanks!"


def old_database(path: Path) -> None:
    """A database of schema 9, its three messages indexed as that schema did: each with
    the message before it as context, and nothing of the message after."""
    with sqlite3.connect(path) as db:
        for script in MIGRATIONS[:9]:
            db.executescript(script)
        db.execute("PRAGMA user_version = 9")
        keys = scope_keys(Scope.parse(C1), True)
        before = ""
        for number, (author, text) in enumerate(
            (("Priya", QUESTION), ("Marco", REPLY), ("Priya", THANKS)), start=1
        ):
            db.execute(
                "INSERT INTO messages (id, conversation, role, author, content, created_at, "
                "scope, author_name) VALUES (?, ?, 'user', '', ?, ?, ?, ?)",
                (number, THREAD, text, f"2026-11-02T09:0{number}:00.000000Z", C1, author),
            )
            db.execute(
                "INSERT INTO messages_fts (rowid, content, context, author, scope_keys) "
                "VALUES (?, ?, ?, ?, ?)",
                (number, text, before, author, keys),
            )
            before = text


def search(capsys: pytest.CaptureFixture[str], query: str) -> list[dict[str, Any]]:
    code = main(["notes", "search", query, "--history", "--scope", C1, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    found: list[dict[str, Any]] = json.loads(out)
    return found


def test_an_upgraded_index_finds_a_question_by_its_answer(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_database(env / "cli.db")

    by_answer = search(capsys, "8443")
    by_question = search(capsys, "gateway port")

    # Each of the three holds 8443 itself or next to it; the question was not found before.
    assert {hit["content"] for hit in by_answer} == {QUESTION, REPLY, THANKS}
    [question] = [hit for hit in by_answer if hit["content"] == QUESTION]
    assert (question["author"], question["at"]) == ("Priya", "2026-11-02T09:01:00.000000Z")
    # The reply, found by the question before it, keeps its own author and date.
    assert {hit["content"] for hit in by_question} == {QUESTION, REPLY}
    [reply] = [hit for hit in by_question if hit["content"] == REPLY]
    assert (reply["author"], reply["at"]) == ("Marco", "2026-11-02T09:02:00.000000Z")
    assert THANKS not in {hit["content"] for hit in by_question}
