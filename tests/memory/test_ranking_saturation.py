"""Column weights say how much a column counts, never how bm25 saturates a repeated word.

FTS5 multiplies every occurrence by its column's weight before bm25 saturates the count,
so a summary weighed above 1 counts one mention of a word as more than one: a note that
says the question's word twice then gains little over notes that say a rarer word once,
and loses to them where plain bm25 ranks it first. A small fixed set of one channel's
notes, imported and searched through `lorebot notes import` and `lorebot notes search
--json`, scored against plain bm25 over the same text (one FTS5 column, porter, every word
of the question ORed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.support.ranking import plain_bm25_over

pytestmark = pytest.mark.usefixtures("on_each_engine")  # the floor holds on both engines

SCOPE = "channel:slack/C0DATA"
K = 5
QUESTION = "why did the exporter stall after the upgrade?"
ANSWER = "exporter-config"
PEOPLE = ("Lena", "Sam", "Priya", "Dev", "Aisha", "Tom")
SERVICES = ("ledger", "gateway", "mailer", "indexer", "resolver", "scheduler", "billing")


def notes() -> list[tuple[str, str]]:
    """(topic, summary): six stalls of other services, log lines in which "exporter" is
    about one and a half times as common as "stall", and the answer, which names the
    exporter twice (and once more in its topic). Only the answer's topic holds a word of
    the question."""
    found = [
        (f"queue-{i}", f"{name}: the {SERVICES[i]} queue had a stall overnight")
        for i, name in enumerate(PEOPLE)
    ]
    for i in range(200):
        found.append((f"probe-{i}", f"{SERVICES[i % 7]} health probe {i} passed"))
    for i in range(40):
        found.append((f"batch-{i}", f"exporter batch {i} written to {SERVICES[i % 7]}"))
    for i in range(20):
        found.append((f"alarm-{i}", f"{SERVICES[i % 7]} stall alarm {i} cleared"))
    found.append((ANSWER, "Omar: the new exporter kept reading the old exporter config"))
    return found


def plain_bm25(question: str) -> list[str]:
    """The reference: one FTS5 column of topic and summary, every word ORed, bm25()."""
    return plain_bm25_over([(t, f"{t} {s}") for t, s in notes()], question, K)


def test_a_word_said_twice_ranks_as_plain_bm25_ranks_it(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = env / "notes.jsonl"
    source.write_text(
        "".join(json.dumps({"scope": SCOPE, "topic": t, "summary": s}) + "\n" for t, s in notes()),
        encoding="utf-8",
    )
    assert main(["notes", "import", str(source)]) == 0
    capsys.readouterr()

    assert main(["notes", "search", QUESTION, "--scope", SCOPE, "-k", str(K), "--json"]) == 0
    found = [hit["topic"] for hit in json.loads(capsys.readouterr().out)]

    reference = plain_bm25(QUESTION)
    assert reference[0] == ANSWER, f"the fixed set no longer tests anything: {reference}"
    assert found[0] == ANSWER, f"plain bm25 ranks {ANSWER} first, lorebot: {found}"
