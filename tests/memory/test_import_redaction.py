"""Credentials in imported history and notes, through the real CLI, in every import form.

The secret scan skips a pattern after one search that finds nothing, and tries each
group of markers only where its rarest character occurs; text whose lowercase form is
longer than itself (`İ`) and text with invisible characters take the slower paths. Each
form and each of those paths must still redact every credential, or refuse the note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.history import (
    author,
    channel,
    discord_export,
    post,
    run,
    said,
    search,
    ts,
    user,
    zip_folder,
)

PASSWORD = "Sup3rSecretValue99"
TOKEN = "xoxb-2048-1234567890-AbCdEfGhIjKlMnOp"
# (message, as recall shows it): plain ASCII; `İ` lowercases to two characters, so the
# scan searches the text itself; a zero-width space hides the token until NFKC cleaning;
# a near miss that must come back as it was.
LEAKS = [
    (
        f"deploy creds: password={PASSWORD} on pg-stage-2",
        "deploy creds: password=[REDACTED] on pg-stage-2",
    ),
    (
        f"İzmir replica creds: password={PASSWORD} until friday",
        "İzmir replica creds: password=[REDACTED] until friday",
    ),
    (
        "the chatops bot token is xoxb-2048-1234567890\u200b-AbCdEfGhIjKlMnOp",
        "the chatops bot token is [REDACTED]",
    ),
    (
        "the password rotation runbook is in the wiki",
        "the password rotation runbook is in the wiki",
    ),
]
QUERY = "creds token rotation"


def slack_zip(root: Path) -> tuple[Path, tuple[str, ...]]:
    folder = root / "slack"
    (folder / "general").mkdir(parents=True)
    lists = {
        "users.json": [user("U01ANN", "ann", "Ann Lee")],
        "channels.json": [channel("C0GENERAL", "general", ["U01ANN"])],
    }
    for name, value in lists.items():
        (folder / name).write_text(json.dumps(value, indent=4))
    day = [said("U01ANN", text, ts(n)) for n, (text, _) in enumerate(LEAKS)]
    (folder / "general/2026-09-01.json").write_text(json.dumps(day, indent=4))
    export = zip_folder(folder, root / "slack-export.zip")
    return export, ("--as", "user:slack/U01ANN", "--in", "channel:slack/C0GENERAL")


def discord_folder(root: Path) -> tuple[Path, tuple[str, ...]]:
    root.mkdir(parents=True)
    who = author("210000000000000001", "priya")
    posts = [post(str(700000000000000001 + n), who, text, n) for n, (text, _) in enumerate(LEAKS)]
    place = {"id": "800000000000000001", "type": "GuildTextChat", "name": "ops"}
    export = discord_export(place, posts, ("900000000000000001", "Acme"))
    (root / "Acme - ops [800000000000000001].json").write_text(json.dumps(export))
    return root, ("--as", f"user:discord/{who['id']}", "--in", "channel:discord/800000000000000001")


def jsonl_file(root: Path) -> tuple[Path, tuple[str, ...]]:
    root.mkdir(parents=True)
    path = root / "history.jsonl"
    lines = [
        {
            "conversation": "slack/C0GENERAL",
            "author": "Bob",
            "text": text,
            "timestamp": f"2026-10-02T09:0{n}:00Z",
        }
        for n, (text, _) in enumerate(LEAKS)
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return path, ("--as", "user:slack/U01ANN", "--in", "channel:slack/C0GENERAL")


@pytest.mark.parametrize("export", [slack_zip, discord_folder, jsonl_file])
def test_credentials_are_redacted_in_every_import_form_and_text_kind(
    env: Path, capsys: pytest.CaptureFixture[str], export: Any
) -> None:
    path, viewer = export(env / "export")
    code, out, err = run(capsys, "history", "import", str(path))
    assert code == 0, err
    assert f"imported {len(LEAKS)} new messages" in out
    shown = sorted(hit["content"] for hit in search(capsys, QUERY, *viewer))
    assert shown == sorted(redacted for _, redacted in LEAKS)
    for db in env.glob("cli.db*"):
        data = db.read_bytes()
        assert PASSWORD.encode() not in data and b"AbCdEfGhIjKlMnOp" not in data


@pytest.mark.parametrize(
    "body",
    [
        f"connect with password={PASSWORD}",  # read by pydantic in one step
        f"connect with password={PASSWORD} \\ud800",  # a lone surrogate: read by the stdlib
        f"İzmir replica: password={PASSWORD}",
        "the bot uses xoxb-2048-1234567890\\u200b-AbCdEfGhIjKlMnOp",
    ],
)
def test_a_note_holding_a_credential_is_refused_on_every_reading_path(
    env: Path, capsys: pytest.CaptureFixture[str], body: str
) -> None:
    source = env / "notes.jsonl"
    good = '{"scope": "channel:slack/C1", "topic": "staging-db", "summary": "pg-stage-2"}'
    leak = f'{{"scope": "channel:slack/C1", "topic": "db-creds", "summary": "x", "body": "{body}"}}'
    source.write_text(f"{good}\n{leak}\n", encoding="utf-8")
    code, out, err = run(capsys, "notes", "import", str(source))
    assert code == 1 and out == ""
    assert err.startswith(f"lorebot: {source} line 2: not saved: the note contains "), err
    listed = run(capsys, "notes", "list", "--scope", "channel:slack/C1")[1]
    assert listed.strip() == "no notes in channel:slack/C1"  # not even the good line
