"""A note search looks for a question's numbers in the notes' summaries and bodies, not in
their topics: a topic is a slug whose numbers are dates and sequence numbers, and a
version asked for ("6.2.15") matched them instead of the note that names the version.
The topic's words are still searched. Through `lorebot notes import` and `notes search`,
on both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.main import main

pytestmark = pytest.mark.usefixtures("on_each_engine")  # both engines rank alike

SCOPE = "channel:slack/C0DEPLOYS"

# Deploy announcements as a history import writes them: a topic of day and turn number.
ANSWER = ("deploys-2026-02-03-0042", "Dana: api-gateway 6.2.15 is out, I deployed it")
DISTRACTORS = [
    (f"deploys-2026-0{month}-{day}-00{turn:02d}", f"Sam: api-gateway {version} is out")
    for month, day, turn, version in [
        (6, 15, 2, "6.3.1"),
        (2, 15, 6, "6.1.9"),
        (6, 2, 15, "6.4.0"),
        (2, 6, 15, "6.0.7"),
        (6, 15, 15, "5.9.2"),
        (2, 2, 6, "6.1.8"),
        (6, 6, 2, "6.3.4"),
        (2, 15, 15, "6.0.1"),
    ]
]
OWNER = ("billing-owner", "Marco, with Priya as his backup")


def search(capsys: pytest.CaptureFixture[str], question: str) -> list[str]:
    code = main(["notes", "search", question, "--scope", SCOPE, "-k", "3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [hit["topic"] for hit in json.loads(out)]


def test_a_version_finds_the_note_naming_it_not_topics_holding_its_numbers(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = env / "deploys.jsonl"
    rows = [{"scope": SCOPE, "topic": t, "summary": s} for t, s in [ANSWER, *DISTRACTORS, OWNER]]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert main(["notes", "import", str(source)]) == 0
    capsys.readouterr()

    assert search(capsys, "who deployed api-gateway 6.2.15?")[0] == ANSWER[0]
    # The topic's words still find a note whose summary does not hold them.
    assert search(capsys, "who owns billing?") == [OWNER[0]]
