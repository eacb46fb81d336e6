"""lorebot's words-only note recall against a plain FTS5 query, on REALTALK and the ops set.

REALTALK (`benchmarks/data/realtalk_eval/`, written by `make_realtalk_eval.py`) is real
conversations nobody on the project wrote, with its authors' memory questions and their
evidence turns; the ops set (`benchmarks/data/ops_eval/`, `make_ops_eval.py`) is the one
`recall_eval.py` measures. Each half of each set gets its own store, built as
`recall_eval.py` builds it: every turn imported as a note with lorebot's `import_drafts`
into SQLite in a temporary folder. A REALTALK conversation is one scope and each of its
questions is searched in that scope alone; an ops question is searched over every channel
of its half, as `recall_eval.py` does. Top 10, for:

- plain FTS5 (the reference): an FTS5 table with `tokenize='porter unicode61'` over the
  notes' (summary, body), ranked by `bm25()` with equal column weights, queried with the
  question's words ORed after dropping common English stopwords (NLTK's list, as
  `memory.ranking` keeps it), or all of its words when only stopwords are left;
- lorebot words: `NoteStore.search(question, k=10)`, no vectors.

hit@5, hit@10 and MRR@10 count the first evidence turn found (`recall_eval.score`).

    python benchmarks/public_eval.py                 # both sets, both halves
    python benchmarks/public_eval.py --set realtalk --json results.json
    python benchmarks/public_eval.py --ranks         # questions lorebot ranks lower
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import recall_eval
from recall_eval import Question, Score, first_rank, score
from results import record

from memory import NoteDraft, Scope, explicit
from memory.policy.visibility import Visibility
from memory.ranking import ENGLISH_STOPWORDS
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.fts import quote
from memory.sqlite.notes import SqliteNoteStore
from memory.types import Category

REALTALK = Path(__file__).resolve().parent / "data" / "realtalk_eval"
K = recall_eval.K
HALVES = {"first": "dev", "second": "test"}
PLAIN, LOREBOT = "plain FTS5 (reference)", "lorebot words"
# lorebot's words-only recall on PostgreSQL (`--postgresql`), the same notes imported there.
ON_POSTGRESQL = "lorebot words, PostgreSQL"
_WORD = re.compile(r"\w+")


def plain_match(text: str) -> str | None:
    """The question's words, lowercased, quoted and ORed, common English stopwords left
    out (all words when nothing else is left)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    kept = [w for w in words if w not in ENGLISH_STOPWORDS] or words
    return " OR ".join(quote(w) for w in kept) or None


@dataclass(frozen=True)
class Asked:
    """A question and the scopes it is searched in."""

    question: Question
    scopes: tuple[Scope, ...]


@dataclass(frozen=True)
class Half:
    """One half of a set: its notes (each with the key of its turn) and its questions."""

    name: str
    notes: list[tuple[str, NoteDraft]]
    asked: list[Asked]


# --- the sets --------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def realtalk_scope(conversation: str) -> Scope:
    return Scope.parse(f"channel:realtalk/{conversation}")


def realtalk_half(half: str) -> Half:
    """A half of REALTALK: one scope per conversation, each question asked in its own."""
    notes: list[tuple[str, NoteDraft]] = []
    numbers: dict[str, int] = {}
    for turn in read_jsonl(REALTALK / "turns.jsonl"):
        if turn["half"] != half:
            continue
        number = numbers[turn["conversation"]] = numbers.get(turn["conversation"], 0) + 1
        draft = NoteDraft(
            scope=realtalk_scope(turn["conversation"]),
            topic=f"turn{number:05d}",
            summary=turn["summary"],
            body=turn["body"],
            category=Category.FACT,
            author=turn["speaker"],
            source=turn["id"],
        )
        notes.append((turn["id"], draft))
    asked = [
        Asked(
            Question(q["id"], f"category {q['category']}", q["question"], frozenset(q["evidence"])),
            (realtalk_scope(q["conversation"]),),
        )
        for q in read_jsonl(REALTALK / "questions.jsonl")
        if q["half"] == half
    ]
    return Half(half, notes, asked)


def ops_half(half: str) -> Half:
    """A half of the ops set, notes as `recall_eval.note_of` makes them, every question
    asked over all channels of the half."""
    turns = [t for t in recall_eval.read_jsonl("turns.jsonl") if t["half"] == half]
    notes = [(str(t["id"]), recall_eval.note_of(t)) for t in turns]
    scopes = tuple(sorted({d.scope for _, d in notes}, key=str))
    asked = [
        Asked(Question(q["id"], q["kind"], q["question"], frozenset(q["evidence"])), scopes)
        for q in recall_eval.read_jsonl("questions.jsonl")
        if q["half"] == half
    ]
    return Half(half, notes, asked)


SETS: dict[str, Callable[[str], Half]] = {"realtalk": realtalk_half, "ops": ops_half}


# --- the store and the two rankings ----------------------------------------------------


Ranker = Callable[[Asked], Awaitable[list[str]]]


@dataclass
class Store:
    db: SqliteDatabase
    notes: SqliteNoteStore
    key: dict[int, str]  # note id -> turn key
    postgresql: Any = None  # the same notes in PostgreSQL's stores, with `--postgresql`
    pg_key: dict[int, str] | None = None


async def build(half: Half, path: Path) -> Store:
    """lorebot's store of the half's notes, and the plain reference table beside it."""
    db = await SqliteDatabase.open(path)
    notes = SqliteNoteStore(db)
    await notes.import_drafts([d for _, d in half.notes], actor="bench")
    async with db.conn.execute("SELECT id, source FROM notes") as cursor:
        key = {int(r[0]): str(r[1]) for r in await cursor.fetchall()}
    async with db.write() as conn:
        await conn.execute(
            "CREATE VIRTUAL TABLE plain_ref USING fts5(summary, body, scope UNINDEXED, "
            "tokenize = 'porter unicode61')"
        )
        await conn.execute(
            "INSERT INTO plain_ref (rowid, summary, body, scope) "
            "SELECT id, summary, body, scope FROM notes"
        )
    return Store(db, notes, key)


async def add_postgresql(store: Store, half: Half, url: str) -> None:
    """The half's notes imported into an empty PostgreSQL database as well."""
    from memory.postgres.stores import open_stores
    from memory.stores.stores import StoreOptions

    stores = await open_stores(url, StoreOptions(), pool_size=2)
    await stores.notes.import_drafts([d for _, d in half.notes], actor="bench")
    found = await stores.db.rows("SELECT id, source FROM notes")
    store.postgresql, store.pg_key = stores, {int(r["id"]): str(r["source"]) for r in found}


def rankers(store: Store) -> dict[str, Ranker]:
    visibility: dict[tuple[Scope, ...], Visibility] = {}

    async def plain(a: Asked) -> list[str]:
        match = plain_match(a.question.text)
        if match is None:
            return []
        scopes = [str(s) for s in a.scopes]
        marks = ", ".join("?" for _ in scopes)
        async with store.db.conn.execute(
            "SELECT rowid FROM plain_ref WHERE plain_ref MATCH ? "
            f"AND scope IN ({marks}) ORDER BY bm25(plain_ref, 1.0, 1.0) LIMIT ?",
            (match, *scopes, K),
        ) as cursor:
            return [store.key[int(r[0])] for r in await cursor.fetchall()]

    async def lorebot(a: Asked) -> list[str]:
        seen = visibility.setdefault(a.scopes, explicit(a.scopes))
        hits = await store.notes.search(a.question.text, seen, k=K, bump=False, snippets=False)
        return [store.key[h.note.id] for h in hits]

    async def on_postgresql(a: Asked) -> list[str]:
        assert store.postgresql is not None and store.pg_key is not None
        seen = visibility.setdefault(a.scopes, explicit(a.scopes))
        hits = await store.postgresql.notes.search(
            a.question.text, seen, k=K, bump=False, snippets=False
        )
        return [store.pg_key[h.note.id] for h in hits]

    found: dict[str, Ranker] = {PLAIN: plain, LOREBOT: lorebot}
    if store.postgresql is not None:
        found[ON_POSTGRESQL] = on_postgresql
    return found


# --- report -----------------------------------------------------------------------------


async def run_half(
    name: str, half: Half, workdir: Path, ranks: bool, pg_url: str | None = None
) -> dict[str, Any]:
    store = await build(half, workdir / f"{name}-{half.name}.db")
    try:
        if pg_url is not None:
            await add_postgresql(store, half, pg_url)
        found = {
            label: [await rank(a) for a in half.asked] for label, rank in rankers(store).items()
        }
    finally:
        await store.db.close()
        if store.postgresql is not None:
            await store.postgresql.close()
    qs = [a.question for a in half.asked]
    scores = {label: score(lists, qs) for label, lists in found.items()}
    report: dict[str, Any] = {
        "turns": len(half.notes),
        "questions": len(qs),
        **{label: scores[label].__dict__ for label in scores},
    }
    lower = [
        (q.id, ref, ours)
        for q, p, lb in zip(qs, found[PLAIN], found[LOREBOT], strict=True)
        if (ref := first_rank(p, q)) is not None
        and ((ours := first_rank(lb, q)) is None or ours > ref)
    ]
    higher = sum(
        1
        for q, p, lb in zip(qs, found[PLAIN], found[LOREBOT], strict=True)
        if (ours := first_rank(lb, q)) is not None
        and ((ref := first_rank(p, q)) is None or ref > ours)
    )
    report["lower"], report["higher"] = len(lower), higher
    if ranks:
        report["lower questions"] = [{"id": i, "plain": r, "lorebot": o} for i, r, o in lower]
        texts = {q.id: q.text for q in qs}
        print(
            f"\n{name} {half.name}: {len(lower)} questions ranked lower by lorebot, "
            f"{higher} higher (rank of the first evidence turn, plain -> lorebot)"
        )
        for i, r, o in lower:
            print(f"  {i}: {r} -> {o or '-'}  {texts[i]}")
    return report


def print_table(report: dict[str, Any]) -> None:
    print(
        "\n| set | half | turns | questions | ranking | hit@5 | hit@10 | MRR@10 | lower / higher |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for set_name, halves in report.items():
        for half, r in halves.items():
            for label in (PLAIN, LOREBOT, ON_POSTGRESQL):
                if label not in r:
                    continue
                s = Score(**r[label])
                moved = f"{r['lower']} / {r['higher']}" if label == LOREBOT else ""
                print(
                    f"| {set_name} | {half} | {r['turns']} | {r['questions']} | {label} | "
                    f"{s.hit5:.1%} | {s.hit10:.1%} | {s.mrr:.3f} | {moved} |"
                )


def start_postgresql(workdir: Path) -> Any:
    """A private PostgreSQL server for the run (tests/support/postgres.py's)."""
    import os

    from tests.support.postgres import PostgresServer, server_programs

    programs = server_programs()
    if programs is None:
        raise SystemExit("--postgresql needs Debian's PostgreSQL: apt-get install postgresql")
    os.chmod(workdir, 0o755)
    return PostgresServer(workdir / "postgres").start(programs)


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=[*SETS, "both"], default="both")
    parser.add_argument("--half", choices=[*HALVES, "both"], default="both")
    parser.add_argument(
        "--ranks",
        action="store_true",
        help="list the questions lorebot ranks lower than plain FTS5",
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument(
        "--postgresql",
        action="store_true",
        help="rank the same notes on PostgreSQL too (a private server of Debian's "
        "PostgreSQL, started for the run)",
    )
    args = parser.parse_args(argv)
    if args.set in ("realtalk", "both") and not (REALTALK / "turns.jsonl").exists():
        print(
            f"{REALTALK} is empty: run benchmarks/make_realtalk_eval.py on a copy of "
            "REALTALK first",
            file=sys.stderr,
        )
        return 1
    sets = list(SETS) if args.set == "both" else [args.set]
    halves = list(HALVES) if args.half == "both" else [args.half]
    report: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="lorebot-public-eval-") as tmp:
        server = start_postgresql(Path(tmp)) if args.postgresql else None
        try:
            for set_name in sets:
                for half in halves:
                    data = SETS[set_name](HALVES[half])
                    pg_url = None if server is None else server.new_database()
                    report.setdefault(set_name, {})[half] = await run_half(
                        set_name, data, Path(tmp), args.ranks, pg_url
                    )
        finally:
            if server is not None:
                server.stop()
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    record_figures(report)
    return 0


FIGURES = {
    "realtalk": "REALTALK held-back half, hit@5 / hit@10 / MRR@10",
    "ops": "ops set held-back half, hit@5 / hit@10 / MRR@10",
}


def record_figures(report: dict[str, Any]) -> None:
    """Each set's held-back half, into the current table of RESULTS.md."""
    for set_name, halves in report.items():
        if "second" not in halves:
            continue
        rankings = halves["second"]
        for label, key, who in (
            (LOREBOT, f"public.{set_name}", ": lorebot (SQLite)"),
            (PLAIN, f"public.{set_name}.plain", " (a plain FTS5 query)"),
            (ON_POSTGRESQL, f"public.{set_name}.postgresql", ": lorebot on PostgreSQL"),
        ):
            if label in rankings:
                s = Score(**rankings[label])
                value = f"{s.hit5:.1%} / {s.hit10:.1%} / {s.mrr:.3f}".replace(" 0.", " .")
                record(key, FIGURES[set_name] + who, value)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
