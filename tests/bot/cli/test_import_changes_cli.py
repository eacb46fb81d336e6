"""`lorebot notes import` is one change: `notes history` shows it once (per scope, counting
that scope's notes), and `notes revert` and `notes undo` revert it as a whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def history(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    code, out, _ = run(capsys, "notes", "history", "--json", *argv)
    assert code == 0
    found: list[dict[str, Any]] = json.loads(out)
    return found


def write_notes(path: Path) -> Path:
    lines = [
        {"scope": "channel:slack/C1", "topic": "staging-db", "summary": "staging is on zebra"},
        {"scope": "channel:slack/C1", "topic": "vpn", "summary": "the VPN gateway is vpn-2"},
        {
            "scope": "user:slack/U1",
            "topic": "salary",
            "summary": "asked for a raise",
            "private": True,
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_an_import_is_one_change_in_history_and_is_reverted_whole(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "staging is on giraffe")
    source = write_notes(env / "notes.jsonl")

    code, out, _ = run(capsys, "notes", "import", str(source))

    assert code == 0 and out.strip().endswith("2 new, 1 updated, 0 unchanged (change 2)")
    _, text, _ = run(capsys, "notes", "history")
    assert text.splitlines()[0].split()[3:7] == ["import", "import", "#2:", "3"]
    [whole, _] = history(capsys)
    assert (whole["id"], whole["action"], whole["notes"], whole["scope"]) == (2, "import", 3, None)
    # A channel's history counts its own notes of the import; nothing of the DM note shows.
    [in_channel, _] = history(capsys, "--scope", "channel:slack/C1")
    assert (in_channel["id"], in_channel["notes"]) == (2, 2)
    assert (in_channel["summary_before"], in_channel["summary_after"]) == (None, None)
    _, text, _ = run(capsys, "notes", "history", "--scope", "channel:slack/C1", "-n", "1")
    assert "import #2: 2 notes in channel:slack/C1" in text and "salary" not in text
    [of_note, _] = history(capsys, "--scope", "channel:slack/C1", "--topic", "staging-db")
    assert (of_note["action"], of_note["summary_before"]) == ("import", "staging is on giraffe")

    code, out, _ = run(capsys, "notes", "revert", "2")

    assert (code, out) == (0, "reverted change 2: 3 notes as before it (change 3)\n")
    _, listed, _ = run(capsys, "notes", "list")
    assert "giraffe" in listed and "zebra" not in listed and "salary" not in listed
    [revert, imported, _] = history(capsys)
    assert (revert["action"], revert["notes"], imported["reverted_by"]) == ("revert", 3, 3)
    code, _, err = run(capsys, "notes", "revert", "2")
    assert code == 1 and "already reverted by change 3" in err


def test_revert_says_which_notes_of_an_import_it_left(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_notes(env / "notes.jsonl")
    run(capsys, "notes", "import", str(source))
    run(capsys, "notes", "forget", "channel:slack/C1", "vpn")

    code, out, _ = run(capsys, "notes", "revert", "1")

    assert code == 0
    assert out.splitlines() == [
        "reverted change 1: 2 notes as before it (change 3)",
        "left 1 of its notes as later changes made them",
    ]
    assert run(capsys, "notes", "list")[1] == "no notes\n"


def test_undo_after_an_import_reverts_all_of_it_and_a_second_import_changes_nothing(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_notes(env / "notes.jsonl")
    run(capsys, "notes", "import", str(source))
    code, out, _ = run(capsys, "notes", "import", str(source))
    assert code == 0 and out.strip().endswith("0 new, 0 updated, 3 unchanged")
    assert len(history(capsys)) == 1

    code, out, _ = run(capsys, "notes", "undo")

    assert (code, out) == (0, "undid change 1: 3 notes\n")
    assert run(capsys, "notes", "list")[1] == "no notes\n"
