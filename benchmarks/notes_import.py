"""Notes import benchmark: how many notes per second `lorebot notes import` brings in.

It writes generated ops-team notes (the corpus of benchmarks/recall.py: 60% channel, 35%
user, 5% team notes, summaries of 60–120 characters, bodies of 200–800 bytes) to a
temporary folder, as JSON Lines and as an export folder of Markdown files, then imports
each into a fresh database exactly as the command does (`memory.transfer.note_import.import_notes`:
read and validate the file, then one transaction that checks every note for secrets and
writes notes, the import's one change set and the search index). It reports notes per
second of wall time and per second of CPU (both threads: reading, and SQLite writing; the
machine's other load left out), with the CPU split into the main thread's (reading,
validating, the secret check, building rows) and SQLite's, reading alone for comparison,
and checks that the import is one change set and that a second import of the same file
changes nothing. `--repeat 3` runs each form three times and adds a row of the medians.

`--corpus turns` imports chat turns instead, as a long conversation is brought in to be
searched: each turn of `benchmarks/data/ops_eval/turns.jsonl` (10,724 turns of six
channels, 40–300 characters) becomes a note as `benchmarks/recall_eval.py` makes one
(topic from channel, day and turn, summary "Speaker: text", the text in the body only
when the summary had to be cut), the turns repeated under new topics up to `--notes`.

Run by hand, not in CI:

    . /work/venv/bin/activate
    python benchmarks/notes_import.py                     # 100k notes, both forms
    python benchmarks/notes_import.py --notes 20k --forms jsonl
    python benchmarks/notes_import.py --repeat 3 --json /tmp/notes-import.json
    python benchmarks/notes_import.py --notes 100k --forms jsonl --corpus turns --repeat 3
    python benchmarks/notes_import.py --notes 20k --forms jsonl --repeat 5 --compare /tmp/base
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from history_import import (  # noqa: E402
    COMPARE_HELP,
    compare,
    median_of,
    parse_count,
    run_each,
    size_of,
    write_json,
)
from recall import generate_corpus  # noqa: E402
from recall_eval import note_of  # noqa: E402
from results import record  # noqa: E402

from memory import Scope
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore
from memory.transfer.note_export import export_notes  # noqa: E402
from memory.transfer.note_import import import_notes, read_source  # noqa: E402
from memory.types import Note, NoteDraft  # noqa: E402

ACTOR = "cli:bench"


@dataclass
class Result:
    form: str
    notes: int
    files: int
    bytes: int
    read_s: float  # reading and validating the file alone
    import_s: float  # the whole import as the command runs it
    import_cpu_s: float  # CPU time of both threads (reading, and SQLite writing)
    main_cpu_s: float  # of those, the main thread's: reading, validating, building rows
    created: int
    again_changed: int  # created or updated by a second import of the same file
    load: float
    change_sets: int = 1  # after both imports: the first is one change set, the second none

    def rate(self, seconds: float) -> float:
        return self.notes / seconds if seconds else float("inf")

    def row(self, label: str = "") -> str:
        return (
            f"{label or self.form:8} {self.files:6} {self.bytes / 1e6:5.1f}  {self.read_s:6.2f}"
            f"  {self.import_s:8.2f}  {self.import_cpu_s:5.2f}  {self.main_cpu_s:5.2f}"
            f"  {self.rate(self.read_s):12,.0f}  {self.rate(self.import_s):14,.0f}"
            f"  {self.rate(self.import_cpu_s):9,.0f}"
            f"   (created {self.created}, again {self.again_changed}, load {self.load:.2f})"
        )


def median(results: Sequence[Result]) -> Result:
    """Each measured figure's median over runs of one form."""
    return median_of(results, ("read_s", "import_s", "import_cpu_s", "main_cpu_s", "load"))


TURNS = Path(__file__).resolve().parent / "data" / "ops_eval" / "turns.jsonl"


def ops_notes(count: int, seed: int) -> list[NoteDraft]:
    """Generated ops-team notes: the corpus of benchmarks/recall.py."""
    return [
        NoteDraft(
            Scope.parse(g.scope),
            g.topic,
            g.summary,
            g.body,
            g.category,
            g.private,
            author="user:slack/U0000001",
            source="https://example.slack.com/x",
        )
        for g in generate_corpus(count, seed).notes
    ]


def turn_notes(count: int, seed: int) -> list[NoteDraft]:
    """Chat turns as notes, the evaluation set's turns repeated under new topics."""
    with TURNS.open(encoding="utf-8") as lines:
        turns = [note_of(json.loads(line)) for line in lines]
    notes = []
    for number in range(count):
        note = turns[number % len(turns)]
        copy = number // len(turns)
        notes.append(replace(note, topic=f"{note.topic}-{copy}") if copy else note)
    return notes


CORPORA = {"ops": ops_notes, "turns": turn_notes}


def note_line(note: NoteDraft) -> str:
    line = {
        "scope": str(note.scope),
        "topic": note.topic,
        "summary": note.summary,
        "body": note.body,
        "category": note.category.value,
        "private": note.private,
        "author": note.author,
        "source": note.source,
    }
    return json.dumps(line)


def write_jsonl(root: Path, notes: Sequence[NoteDraft]) -> tuple[Path, int]:
    path = root / "notes.jsonl"
    path.write_text("".join(note_line(n) + "\n" for n in notes), encoding="utf-8")
    return path, 1


def write_folder(root: Path, notes: Sequence[NoteDraft]) -> tuple[Path, int]:
    """An export folder exactly as `lorebot notes export` writes it."""
    folder = root / "export"
    when = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    stored = [
        Note(
            id=n,
            scope=d.scope,
            topic=d.topic,
            summary=d.summary,
            body=d.body,
            category=d.category,
            private=d.private,
            pinned=False,
            author=d.author,
            source=d.source,
            confidence=1.0,
            created_at=when,
            updated_at=when,
            access_count=0,
            last_access=None,
            expires_at=None,
        )
        for n, d in enumerate(notes, start=1)
    ]
    return folder, export_notes(stored, folder)


WRITERS = {"jsonl": write_jsonl, "folder": write_folder}


async def run_form(form: str, notes: Sequence[NoteDraft], workdir: Path) -> Result:
    folder = workdir / form
    folder.mkdir()
    source, files = WRITERS[form](folder, notes)
    started = time.perf_counter()
    read_source(source)  # reading alone, for the breakdown
    read_s = time.perf_counter() - started
    db = await SqliteDatabase.open(folder / "bench.db")
    try:
        store = SqliteNoteStore(db)
        started, cpu, main = time.perf_counter(), time.process_time(), time.thread_time()
        result = await import_notes(store, source, actor=ACTOR)
        import_s = time.perf_counter() - started
        import_cpu_s = time.process_time() - cpu
        main_cpu_s = time.thread_time() - main
        again = await import_notes(store, source, actor=ACTOR)
        change_sets = int(await db.scalar("SELECT count(*) FROM note_changes"))
    finally:
        await db.close()
    return Result(
        form=form,
        notes=len(notes),
        files=files,
        bytes=size_of(source),
        read_s=read_s,
        import_s=import_s,
        import_cpu_s=import_cpu_s,
        main_cpu_s=main_cpu_s,
        created=result.created,
        again_changed=again.created + again.updated,
        load=os.getloadavg()[0],
        change_sets=change_sets,
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=parse_count, default=100_000)
    parser.add_argument("--forms", default="jsonl,folder")
    parser.add_argument(
        "--corpus",
        choices=sorted(CORPORA),
        default="ops",
        help="ops notes with bodies of 200-800 bytes, or chat turns",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="runs per form (median row)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--compare", type=Path, metavar="DIR", help=COMPARE_HELP)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    if args.compare is not None:
        options = ["--notes", str(args.notes), "--seed", str(args.seed), "--corpus", args.corpus]
        compare(
            "notes_import.py",
            args.compare,
            ("--forms", forms),
            options,
            args.repeat,
            ("notes_per_s", "notes_per_cpu_s"),
            args.json,
        )
        return 0
    notes = CORPORA[args.corpus](args.notes, args.seed)
    print(f"{args.notes} {args.corpus} notes per form; load before: {os.getloadavg()[0]:.2f}")
    print(
        "form      files MB     read s  import s  CPU s  main   notes/s read  notes/s import"
        "  per CPU s"
    )

    def run(form: str, workdir: Path) -> Result:
        return asyncio.run(run_form(form, notes, workdir))

    def changed_again(r: Result) -> str | None:
        if r.change_sets != 1:  # said as "a second import of FORM recorded …"
            return f"recorded {r.change_sets} change sets in all, not one"
        return f"changed {r.again_changed} notes" if r.again_changed else None

    results = run_each(forms, args.repeat, "lorebot-notes-bench-", run, changed_again, median)
    if results is None:
        return 1
    if args.json:
        write_json(args.json, args.repeat, results, ("notes_per_s", "notes_per_cpu_s"))
    if args.corpus == "ops":
        record_figures(results, args.repeat)
    return 0


def record_figures(results: Sequence[Result], repeat: int) -> None:
    """Ops notes from JSON Lines, notes per second (wall), into RESULTS.md's current table."""
    runs = f"median of {repeat}" if repeat > 1 else "one run"
    for r in results:
        if r.form == "jsonl":
            what = f"notes import, ops notes of 200–800 bytes (JSON Lines), notes/s ({runs})"
            record("import.notes", what, f"{r.rate(r.import_s):,.0f}")


if __name__ == "__main__":
    sys.exit(main())
