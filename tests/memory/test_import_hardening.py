"""`lorebot notes import` on awkward files: repeated topics, hostile JSON, broken Unicode.

Every test goes through the real command line (`bot.cli.main.main`) against a database in a
temporary folder, and checks what a person sees: the exit code, the one-line message, and
what `notes show` / `notes search` find afterwards.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.cli.main import EXIT_USER_ERROR, main

SCOPE = "channel:slack/C1"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def note(topic: str, summary: str, **fields: object) -> str:
    return json.dumps({"scope": SCOPE, "topic": topic, "summary": summary, **fields})


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def fts_is_consistent(env: Path) -> None:
    """FTS5's own check of the note index against the notes table; raises when corrupt."""
    with sqlite3.connect(env / "cli.db") as conn:
        conn.execute("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)")
        conn.execute("INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')")


def search(capsys: pytest.CaptureFixture[str], words: str) -> list[tuple[str, str]]:
    code, out, _ = run(capsys, "notes", "search", words, "--scope", SCOPE, "--json")
    assert code == 0
    return [(hit["topic"], hit["summary"]) for hit in json.loads(out)]


# --- a topic repeated within one file -----------------------------------------------------


def test_a_topic_repeated_in_one_file_is_created_then_updated_in_file_order(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(
        env / "notes.jsonl",
        [
            note("staging-db", "staging is on giraffe", body="old host giraffe.internal"),
            note("vpn", "the VPN gateway is vpn-2"),
            note("staging-db", "staging is on zebra", body="new host zebra.internal"),
        ],
    )

    code, out, err = run(capsys, "notes", "import", str(source))

    assert (code, err) == (0, "")
    assert "2 new, 1 updated, 0 unchanged" in out
    _, shown, _ = run(capsys, "notes", "show", SCOPE, "staging-db")
    assert "staging is on zebra" in shown and "giraffe" not in shown
    assert search(capsys, "zebra") == [("staging-db", "staging is on zebra")]
    assert search(capsys, "giraffe") == []
    assert search(capsys, "vpn") == [("vpn", "the VPN gateway is vpn-2")]
    _, history, _ = run(capsys, "notes", "history", "--scope", SCOPE, "--topic", "staging-db")
    assert [line.split()[3] for line in history.splitlines()] == ["import"]
    fts_is_consistent(env)

    # The import is one change: reverting it removes both notes, the repeated one too.
    import_id = history.split()[0]
    assert run(capsys, "notes", "revert", import_id)[0] == 0
    assert search(capsys, "giraffe") == [] and search(capsys, "zebra") == []
    assert search(capsys, "vpn") == []
    fts_is_consistent(env)


def test_repeats_across_write_chunks_keep_the_last_text_and_a_consistent_index(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    filler = [note(f"filler-{n}", f"filler note {n}") for n in range(1100)]
    lines = [
        note("runbook", "version alpha"),
        *filler,
        note("runbook", "version bravo"),
        note("filler-3", "filler note three changed"),
        note("runbook", "version charlie"),
    ]
    source = write(env / "notes.jsonl", lines)

    code, out, err = run(capsys, "notes", "import", str(source))

    assert (code, err) == (0, "")
    assert "1101 new, 3 updated, 0 unchanged" in out
    assert search(capsys, "charlie") == [("runbook", "version charlie")]
    assert search(capsys, "alpha") == [] and search(capsys, "bravo") == []
    assert search(capsys, "three") == [("filler-3", "filler note three changed")]
    fts_is_consistent(env)
    # Again into notes that now exist: the lines still apply in order, the last one wins.
    _, out, _ = run(capsys, "notes", "import", str(source))
    assert "0 new, 5 updated, 1099 unchanged" in out
    assert search(capsys, "charlie") == [("runbook", "version charlie")]
    fts_is_consistent(env)


# --- hostile JSON -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            '{"scope": "channel:slack/C1", "topic": "x", "summary": "y", "pinned": '
            + "7" * 5000
            + "}",
            "a number has more than 4300 digits",
        ),
        ("[" * 100_000, "the JSON is nested too deeply"),
        (
            '{"scope": "channel:slack/C1", "topic": "x", "summary": ' + "[" * 100_000,
            "the JSON is nested too deeply",
        ),
    ],
    ids=["5000-digit number", "100k brackets", "deep value"],
)
def test_hostile_json_is_an_input_error_naming_the_line(
    env: Path, capsys: pytest.CaptureFixture[str], line: str, says: str
) -> None:
    source = write(env / "notes.jsonl", [note("fine", "a good note"), line])

    code, _, err = run(capsys, "notes", "import", str(source))

    assert code == EXIT_USER_ERROR
    assert err == f"lorebot: {source} line 2: {says}\n"
    assert "fine" not in run(capsys, "notes", "list")[1]  # all or nothing


def test_a_line_separator_inside_a_json_string_is_not_a_line_break(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = json.dumps(
        {"scope": SCOPE, "topic": "sep", "summary": "one\u2028two", "body": "a\u2029b\x85c\x0cd"},
        ensure_ascii=False,
    )
    source = write(env / "notes.jsonl", [text, note("next", "the next note")])

    code, out, err = run(capsys, "notes", "import", str(source))

    assert (code, err) == (0, "")
    assert "2 new" in out
    assert "a\u2029b\x85c\x0cd" in run(capsys, "notes", "show", SCOPE, "sep")[1]


# --- broken Unicode -----------------------------------------------------------------------


def test_a_lone_surrogate_escape_is_imported_as_a_replacement_character(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = env / "notes.jsonl"
    source.write_text(
        '{"scope": "channel:slack/C1", "topic": "broken", "summary": "cut \\ud83d emoji",'
        ' "body": "pair \\ud83d\\ude00 kept, lone \\udc00 replaced", "author": "x\\ud800"}\n',
        encoding="utf-8",
    )

    code, out, err = run(capsys, "notes", "import", str(source))

    assert (code, err) == (0, "")
    assert "1 new" in out
    _, shown, _ = run(capsys, "notes", "show", SCOPE, "broken")
    assert "cut \ufffd emoji" in shown
    assert "pair 😀 kept, lone \ufffd replaced" in shown
    assert search(capsys, "emoji") == [("broken", "cut \ufffd emoji")]
    fts_is_consistent(env)


def test_bytes_that_are_not_utf8_are_an_input_error_naming_the_line(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = env / "notes.jsonl"
    source.write_bytes(
        note("fine", "a good note").encode()
        + b"\n"
        + b'{"scope": "channel:slack/C1", "topic": "latin", "summary": "caf\xe9"}\n'
    )

    code, _, err = run(capsys, "notes", "import", str(source))

    assert code == EXIT_USER_ERROR
    assert err.startswith(f"lorebot: {source} line 2: not valid UTF-8")
    assert "0xe9" in err and "UTF-8" in err and err.count("\n") == 1
    assert "fine" not in run(capsys, "notes", "list")[1]  # all or nothing


def test_an_export_folder_with_broken_unicode_is_handled_like_a_jsonl_file(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = env / "export" / "channel" / "slack" / "C1"
    folder.mkdir(parents=True)
    (folder / "yaml-escape.md").write_text(
        '---\nsummary: "half \\ud83d an emoji"\n---\nbody text\n', encoding="utf-8"
    )
    code, out, err = run(capsys, "notes", "import", str(env / "export"))
    assert (code, err) == (0, "")
    assert "half \ufffd an emoji" in run(capsys, "notes", "show", SCOPE, "yaml-escape")[1]

    (folder / "latin.md").write_bytes(b"---\nsummary: ok\n---\ncaf\xe9\n")
    code, _, err = run(capsys, "notes", "import", str(env / "export"))
    assert code == EXIT_USER_ERROR
    assert "latin.md line 4: not valid UTF-8" in err and err.count("\n") == 1


def test_notes_add_with_bytes_that_are_not_utf8_saves_a_replacement_character(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = b"caf\xe9 opens at 8".decode("utf-8", "surrogateescape")  # as argv gives it
    code = main(["notes", "add", "channel:slack/C1", "cafe", summary])
    assert code == 0, capsys.readouterr().err
    assert main(["notes", "show", "channel:slack/C1", "cafe"]) == 0
    assert "caf\ufffd opens at 8" in capsys.readouterr().out
