"""Recall on long ops conversations, held out by conversation, against plain FTS5 BM25.

The evaluation set in `benchmarks/data/ops_eval/` (written by `make_ops_eval.py`) holds six
team channels, nine months each, and questions of four kinds (single, multi, temporal,
paraphrase) with the ids of their evidence turns. It is split by conversation: c1-c3 are
the first half, where every weight and threshold is chosen (`--sweep`), c4-c6 the second
half, which is only reported.

Each half gets its own store, built as a user would: every turn imported as a note
(`lorebot notes import`: topic from the channel, date and turn, summary "Speaker: text",
the full text in the body when it is longer), and every turn logged as a message in its
channel's thread with its date and author (what message search reads). Every question is
searched over all channels of its half, top 10, for:

- plain FTS5 BM25 (the reference): a single-column FTS5 table (porter) over the same text,
  queried with every word of the question ORed, ranked by `bm25()`, no other tricks;
- lorebot's words-only ranking (`NoteStore.search`, message search);
- lorebot with vectors (all-MiniLM-L6-v2, when the `bench` extra is installed).

hit@5, hit@10 and MRR@10 count the first evidence turn found; all@10 is the share of
questions whose every evidence turn is in the top 10.

    python benchmarks/recall_eval.py                  # second half, reference and lorebot
    python benchmarks/recall_eval.py --half first --sweep
    python benchmarks/recall_eval.py --half first --weight-grid   # chooses the note weights
    python benchmarks/recall_eval.py --no-vectors --json results.json
    python benchmarks/recall_eval.py --no-vectors --ranks   # per question, vs plain BM25
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory import NoteDraft, Scope, explicit, ranking
from memory.policy.visibility import Visibility
from memory.ranking import query_terms
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite import fts, term_stats
from memory.sqlite import note_search as store_module
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.fts import quote
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.conversations import LogEntry
from memory.types import SUMMARY_MAX_CHARS, Category, slugify

DATA = Path(__file__).resolve().parent / "data" / "ops_eval"
HALVES = {"first": "dev", "second": "test"}
K = 10
KINDS = ("single", "multi", "temporal", "paraphrase")
_WORD = re.compile(r"\w+")

Embedder = Any  # recall_quality.MiniLMEmbedder, imported only when installed


def read_jsonl(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    evidence: frozenset[str]


@dataclass
class HalfStore:
    db: SqliteDatabase
    words: SqliteNoteStore
    hybrid: SqliteNoteStore
    vectors: SqlVectorIndex
    visibility: Visibility
    note_key: dict[int, str]  # note id -> turn id
    message_key: dict[int, str]  # message id -> turn id
    questions: list[Question]
    qvec: dict[str, list[float]]


def note_of(turn: dict[str, Any]) -> NoteDraft:
    """A turn as `lorebot notes import` takes it: a topic naming channel, day and turn, the
    speaker and text as summary, the full text in the body when the summary is cut."""
    line = f"{turn['author']}: {' '.join(turn['text'].split())}"
    summary = line
    if len(line) > SUMMARY_MAX_CHARS:
        summary = line[: line.rfind(" ", 0, SUMMARY_MAX_CHARS - 1)] + "…"
    number = turn["id"].split("-")[1]
    topic = slugify(f"{turn['channel']}-{turn['at'][:10]}-{number}")
    return NoteDraft(
        scope=Scope.parse(turn["scope"]),
        topic=topic,
        summary=summary,
        body=turn["text"] if summary != line else "",
        category=Category.FACT,
        author=turn["author_id"],
        source=turn["id"],
    )


async def build(half: str, path: Path, embedder: Embedder | None) -> HalfStore:
    turns = [t for t in read_jsonl("turns.jsonl") if t["half"] == half]
    questions = [
        Question(q["id"], q["kind"], q["question"], frozenset(q["evidence"]))
        for q in read_jsonl("questions.jsonl")
        if q["half"] == half
    ]
    db = await SqliteDatabase.open(path, want_vectors=embedder is not None)
    vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
    if embedder is not None:
        await vectors.prepare()
    words, hybrid = SqliteNoteStore(db), SqliteNoteStore(db, vectors=vectors)
    await words.import_drafts([note_of(t) for t in turns], actor="bench")
    async with db.conn.execute("SELECT id, source FROM notes") as cursor:
        note_key = {int(r[0]): str(r[1]) for r in await cursor.fetchall()}
    now = [datetime.now(UTC)]
    log = SqlConversationLog(db, SqliteMessageSearch(db), clock=lambda: now[0])
    message_key: dict[int, str] = {}
    for t in turns:
        now[0] = datetime.fromisoformat(t["at"].replace("Z", "+00:00"))
        channel_id = t["scope"].rsplit("/", 1)[1]
        entry = LogEntry("user", t["text"], t["author_id"], t["author"])
        await log.append(
            f"slack/{channel_id}/{t['thread']}", [entry], scope=t["scope"], link=t["id"]
        )
    async with db.conn.execute("SELECT id, link FROM messages") as cursor:
        message_key = {int(r[0]): str(r[1]) for r in await cursor.fetchall()}
    await build_reference(db)
    qvec: dict[str, list[float]] = {}
    if embedder is not None:
        started = time.perf_counter()
        embedded = await vectors.backfill(batch_size=64)
        print(
            f"{half}: embedded {embedded} notes and messages in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        qv = await embedder.embed([q.text for q in questions])
        qvec = {q.id: v for q, v in zip(questions, qv, strict=True)}
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
    scopes = tuple(sorted({Scope.parse(t["scope"]) for t in turns}, key=str))
    return HalfStore(
        db, words, hybrid, vectors, explicit(scopes), note_key, message_key, questions, qvec
    )


async def build_reference(db: SqliteDatabase) -> None:
    """Plain single-column FTS5 tables over the same text as lorebot indexes."""
    async with db.write() as conn:
        await conn.execute(
            "CREATE VIRTUAL TABLE ref_notes USING fts5(text, tokenize = 'porter unicode61')"
        )
        await conn.execute(
            "INSERT INTO ref_notes (rowid, text) SELECT id, topic || ' ' || summary || ' ' "
            "|| body FROM notes"
        )
        await conn.execute(
            "CREATE VIRTUAL TABLE ref_messages USING fts5(text, tokenize = 'porter unicode61')"
        )
        await conn.execute(
            "INSERT INTO ref_messages (rowid, text) SELECT id, content FROM messages"
        )


def plain_match(text: str) -> str | None:
    """Every word of `text`, quoted and ORed: no stopwords, no limits."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return " OR ".join(quote(w) for w in words) or None


async def plain_bm25(db: SqliteDatabase, table: str, text: str, k: int = K) -> list[int]:
    match = plain_match(text)
    if match is None:
        return []
    async with db.conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?",
        (match, k),
    ) as cursor:
        return [int(r[0]) for r in await cursor.fetchall()]


# --- scores -----------------------------------------------------------------------------


@dataclass
class Score:
    n: int
    hit5: float
    hit10: float
    mrr: float
    all10: float

    def cells(self) -> str:
        return f"{self.hit5:.1%} | {self.hit10:.1%} | {self.mrr:.3f} | {self.all10:.1%}"


def score(rankings: Sequence[Sequence[str]], qs: Sequence[Question]) -> Score:
    hit5 = hit10 = rr = every = 0.0
    for ranked, q in zip(rankings, qs, strict=True):
        top = list(ranked[:K])
        ranks = [i for i, key in enumerate(top, start=1) if key in q.evidence]
        if ranks:
            hit5 += ranks[0] <= 5
            hit10 += 1
            rr += 1 / ranks[0]
        every += q.evidence <= set(top)
    n = len(qs) or 1
    return Score(len(qs), hit5 / n, hit10 / n, rr / n, every / n)


Ranker = Callable[[Question], Awaitable[list[str]]]


async def evaluate(ranker: Ranker, qs: Sequence[Question]) -> dict[str, Score]:
    rankings = [await ranker(q) for q in qs]
    result = {"all": score(rankings, qs)}
    for kind in KINDS:
        chosen = [(r, q) for r, q in zip(rankings, qs, strict=True) if q.kind == kind]
        result[kind] = score([r for r, _ in chosen], [q for _, q in chosen])
    return result


# --- rankers ------------------------------------------------------------------------------


def note_rankers(hs: HalfStore) -> dict[str, Ranker]:
    async def reference(q: Question) -> list[str]:
        return [hs.note_key[i] for i in await plain_bm25(hs.db, "ref_notes", q.text)]

    async def words(q: Question) -> list[str]:
        hits = await hs.words.search(q.text, hs.visibility, k=K, bump=False, snippets=False)
        return [hs.note_key[h.note.id] for h in hits]

    async def hybrid(q: Question) -> list[str]:
        hits = await hs.hybrid.search(
            q.text, hs.visibility, k=K, bump=False, snippets=False, vector=hs.qvec[q.id]
        )
        return [hs.note_key[h.note.id] for h in hits]

    rankers: dict[str, Ranker] = {"plain FTS5 BM25 (reference)": reference, "lorebot words": words}
    if hs.qvec:
        rankers["lorebot words + vectors"] = hybrid
    return rankers


def message_rankers(hs: HalfStore) -> dict[str, Ranker]:
    log = SqlConversationLog(hs.db, SqliteMessageSearch(hs.db))

    async def reference(q: Question) -> list[str]:
        return [hs.message_key[i] for i in await plain_bm25(hs.db, "ref_messages", q.text)]

    def lorebot(vectors: bool) -> Ranker:
        async def rank(q: Question) -> list[str]:
            hits = await log.search(
                q.text,
                hs.visibility,
                k=K,
                vectors=hs.vectors if vectors else None,
                vector=hs.qvec[q.id] if vectors else None,
            )
            return [hs.message_key[h.id] for h in hits]

        return rank

    rankers: dict[str, Ranker] = {
        "plain FTS5 BM25 (reference)": reference,
        "lorebot words": lorebot(False),
    }
    if hs.qvec:
        rankers["lorebot words + vectors"] = lorebot(True)
    return rankers


# --- sweeps (first half only) -------------------------------------------------------------


@contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def under(ranker: Ranker, module: Any, **values: Any) -> Ranker:
    async def rank(q: Question) -> list[str]:
        with patched(module, **values):
            return await ranker(q)

    return rank


async def common_words_dropped(hs: HalfStore, share: float = 0.1) -> Ranker:
    """lorebot's words-only ranking as it was: query words held by more than `share` of
    the notes left out (a query keeps its rarest word)."""
    total = int(await hs.db.scalar("SELECT count(*) FROM notes"))
    cap = int(share * total) + 1

    async def frequency(term: str) -> int:
        return int(
            await hs.db.scalar(
                "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (quote(term),)
            )
        )

    async def rank(q: Question) -> list[str]:
        terms = ranking.ranking_terms(q.text)
        counts = {t: await frequency(t) for t in terms}
        kept = [t for t in terms if counts[t] < cap] or [min(terms, key=lambda t: counts[t])]
        hits = await hs.words.search(" ".join(kept), hs.visibility, k=K, bump=False, snippets=False)
        return [hs.note_key[h.note.id] for h in hits]

    return rank


def stopwords_dropped(hs: HalfStore) -> Ranker:
    """lorebot's words-only ranking with the stopwords of `ranking.STOPWORDS` left out."""

    async def rank(q: Question) -> list[str]:
        text = " ".join(query_terms(q.text))
        hits = await hs.words.search(text, hs.visibility, k=K, bump=False, snippets=False)
        return [hs.note_key[h.note.id] for h in hits]

    return rank


def note_weights(topic: float, summary: float, body: float) -> str:
    return fts.bm25_call("notes_fts", (topic, summary, body))


async def note_sweep(hs: HalfStore) -> dict[str, Ranker]:
    words = note_rankers(hs)["lorebot words"]
    rankers: dict[str, Ranker] = {
        "common words dropped (10%), as before": await common_words_dropped(hs),
        "stopwords dropped, as before": stopwords_dropped(hs),
        "no word skipped (term_stats off)": under(words, term_stats, MIN_NOTES=10**12),
    }
    for weights in (
        (4.0, 2.0, 1.0),
        (1.0, 1.0, 1.0),
        (2.0, 1.0, 1.0),
        (1.0, 2.0, 1.0),
        (0.5, 1.0, 1.0),
        (0.0, 1.0, 1.0),
    ):
        name = "column weights topic/summary/body " + "/".join(f"{w:g}" for w in weights)
        rankers[name] = under(words, store_module, _BM25=note_weights(*weights))
    if hs.qvec:
        hybrid = note_rankers(hs)["lorebot words + vectors"]
        for weight in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            rankers[f"fusion keyword weight {weight}"] = under(
                hybrid, ranking, KEYWORD_WEIGHT=weight
            )
    return rankers


# Note column weights tried by `--weight-grid`; bm25 ranks the same under any common scale,
# so body is 1 and topic and summary move relative to it (body 0: topic and summary only).
TOPIC_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
SUMMARY_GRID = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0)
REFERENCE = "reference"
Grid = dict[str, dict[str, Score]]  # weighting (or REFERENCE) -> kind -> score


def weight_name(weights: tuple[float, float, float]) -> str:
    return "topic/summary/body " + "/".join(f"{w:g}" for w in weights)


def weights_of(name: str) -> tuple[float, ...]:
    return tuple(float(w) for w in name.rsplit(" ", 1)[1].split("/"))


def grid() -> list[tuple[float, float, float]]:
    return [(t, s, 1.0) for t in TOPIC_GRID for s in SUMMARY_GRID] + [
        (t, 1.0, 0.0) for t in TOPIC_GRID
    ]


async def weight_grid(hs: HalfStore) -> Grid:
    """lorebot's note words under every column weighting of the grid, and the reference."""
    rankers = note_rankers(hs)
    results = {REFERENCE: await evaluate(rankers["plain FTS5 BM25 (reference)"], hs.questions)}
    for weights in grid():
        ranker = under(rankers["lorebot words"], store_module, _BM25=note_weights(*weights))
        results[weight_name(weights)] = await evaluate(ranker, hs.questions)
    return results


class WordsOnly:
    """Stands in for an embedder where only word rankings are measured (the store of
    recall_quality.py is built with vectors, which the grid never reads)."""

    model = "words-only:none"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


async def quality_grid(workdir: Path) -> Grid:
    """The same grid on the notes and questions of `benchmarks/recall_quality.py`: another
    evaluation set, where word search must not fall below plain bm25 either."""
    sys.path.insert(0, str(DATA.parents[1]))
    import recall_quality as rq

    # build() needs only lorebot's Embedder protocol of its MiniLMEmbedder.
    es = await rq.build(workdir / "quality.db", WordsOnly())  # type: ignore[arg-type]
    try:
        qs = rq.questions("note_questions.jsonl")
        rankers = await rq.note_rankers(es, {q.id: [1.0, 0.0] for q in qs})

        async def scored(ranker: rq.Ranker) -> dict[str, Score]:
            found = rq.score(await rq.rank_all(ranker, qs), qs)
            return {"all": Score(len(qs), found.hit5, found.hit10, found.mrr, 0.0)}

        results = {REFERENCE: await scored(rankers["plain FTS5 BM25 (reference)"])}
        for weights in grid():
            with patched(store_module, _BM25=note_weights(*weights)):
                results[weight_name(weights)] = await scored(rankers["FTS5 alone"])
    finally:
        await es.db.close()
    return results


def at_floor(score: Score, ref: Score) -> bool:
    return score.hit5 >= ref.hit5 and score.hit10 >= ref.hit10 and score.mrr >= ref.mrr


def floor_choice(results: Grid, other: Grid) -> list[str]:
    """The weightings at or above plain bm25 at hit@5, hit@10 and MRR@10 on both sets, best
    MRR@10 on `results` first (then hit@10, hit@5, all@10, then the least lopsided): the
    first one is the choice. A zero weight is not eligible: a note found by that column's
    words alone would score nothing, and real topics and bodies say what a note is about."""
    ref, other_ref = results[REFERENCE]["all"], other[REFERENCE]["all"]
    meets = [
        name
        for name in results
        if name != REFERENCE
        and min(weights_of(name)) > 0
        and at_floor(results[name]["all"], ref)
        and at_floor(other[name]["all"], other_ref)
    ]

    def rank(name: str) -> tuple[float, ...]:
        weights, score = weights_of(name), results[name]["all"]
        return (-score.mrr, -score.hit10, -score.hit5, -score.all10, -min(weights) / max(weights))

    return sorted(meets, key=rank)


def print_grid(half: str, results: Grid, other: Grid) -> None:
    """Every weighting, the eligible ones at or above plain BM25 on both sets first."""
    ranked = floor_choice(results, other)
    ref, other_ref = results[REFERENCE]["all"], other[REFERENCE]["all"]
    print(
        f"\nnote column weights: {len(ranked)} of {len(results) - 1} eligible and at or "
        f"above plain BM25 on the {half} half ({ref.cells()}) and on recall_quality's "
        f"notes ({other_ref.hit5:.1%} | {other_ref.hit10:.1%} | {other_ref.mrr:.3f})"
        + (f"; the choice: {ranked[0]}" if ranked else "")
        + "\n"
    )
    print(
        f"| weights | {half} half: hit@5 | hit@10 | MRR@10 | all@10 | floor met | "
        "recall_quality: hit@5 | hit@10 | MRR@10 | floor met |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rest = sorted((n for n in results if n not in ranked), key=lambda n: -results[n]["all"].mrr)
    for name in ranked + rest:
        ours, theirs = results[name]["all"], other[name]["all"]
        marks = (
            ["", ""]
            if name == REFERENCE
            else [
                "yes" if at_floor(ours, ref) else "no",
                "yes" if at_floor(theirs, other_ref) else "no",
            ]
        )
        print(
            f"| {name} | {ours.cells()} | {marks[0]} | {theirs.hit5:.1%} | "
            f"{theirs.hit10:.1%} | {theirs.mrr:.3f} | {marks[1]} |"
        )


async def message_sweep(hs: HalfStore) -> dict[str, Ranker]:
    words = message_rankers(hs)["lorebot words"]
    rankers: dict[str, Ranker] = {"stopwords kept": under(words, ranking, STOPWORDS=frozenset())}
    grid = [
        (b, a, s)
        for b in (0.0, 0.25, 0.5, 0.75, 1.0)
        for a in (0.0, 0.25, 0.5, 0.75, 1.0)
        for s in (0.0, 0.5, 1.0)
    ]
    for before, after, author in grid:
        name = f"before {before:g}, after {after:g}, author {author:g}"
        rankers[name] = under(
            words, ranking, BEFORE_WEIGHT=before, AFTER_WEIGHT=after, AUTHOR_WEIGHT=author
        )
    if hs.qvec:
        hybrid = message_rankers(hs)["lorebot words + vectors"]
        for weight in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            rankers[f"fusion keyword weight {weight}"] = under(
                hybrid, ranking, MESSAGE_KEYWORD_WEIGHT=weight
            )
    return rankers


# --- report -------------------------------------------------------------------------------


def first_rank(ranked: Sequence[str], q: Question) -> int | None:
    """The rank (from 1) of the first evidence turn in the top K, or None."""
    return next((i for i, key in enumerate(ranked[:K], start=1) if key in q.evidence), None)


async def print_ranks(label: str, rankers: dict[str, Ranker], qs: Sequence[Question]) -> int:
    """Per question, the rank of its first evidence turn under plain BM25 and under
    lorebot's words (`-` outside the top K); marks the questions lorebot ranks lower.
    Returns how many those are."""
    reference, words = rankers["plain FTS5 BM25 (reference)"], rankers["lorebot words"]
    print(f"\n{label}: rank of the first evidence turn, plain BM25 vs lorebot words\n")
    print("| question | kind | plain BM25 | lorebot words | lower |")
    print("| --- | --- | --- | --- | --- |")
    lower = 0
    for q in qs:
        ref, ours = first_rank(await reference(q), q), first_rank(await words(q), q)
        worse = ref is not None and (ours is None or ours > ref)
        lower += worse
        print(f"| {q.id} | {q.kind} | {ref or '-'} | {ours or '-'} | {'LOWER' if worse else ''} |")
    print(f"\n{label}: lorebot words rank {lower} of {len(qs)} questions lower than plain BM25")
    return lower


def print_table(title: str, results: dict[str, dict[str, Score]], by_kind: bool) -> None:
    print(f"\n{title}\n")
    print("| ranking | questions | hit@5 | hit@10 | MRR@10 | all@10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, scores in results.items():
        kinds = ("all", *KINDS) if by_kind else ("all",)
        for kind in kinds:
            label = name if kind == "all" else f"  {kind}"
            print(f"| {label} | {scores[kind].n} | {scores[kind].cells()} |")


async def run_half(
    half: str,
    embedder: Embedder | None,
    sweep: bool,
    workdir: Path,
    weights: bool = False,
    ranks: bool = False,
) -> dict[str, Any]:
    hs = await build(half, workdir / f"{half}.db", embedder)
    report: dict[str, Any] = {}
    try:
        if ranks:
            for label, rankers in (("notes", note_rankers(hs)), ("messages", message_rankers(hs))):
                report[f"{label} lower"] = await print_ranks(
                    f"{label} ({half} half)", rankers, hs.questions
                )
            return report
        if weights:
            results, other = await weight_grid(hs), await quality_grid(workdir)
            print_grid(half, results, other)
            return {
                "weight grid": {n: r["all"].__dict__ for n, r in results.items()},
                "recall_quality grid": {n: r["all"].__dict__ for n, r in other.items()},
                "choice": floor_choice(results, other)[:1],
            }
        notes = await hs.db.scalar("SELECT count(*) FROM notes")
        print(f"\n## {half} half: {notes} turns, {len(hs.questions)} questions")
        for label, rankers in (("notes", note_rankers(hs)), ("messages", message_rankers(hs))):
            results = {name: await evaluate(r, hs.questions) for name, r in rankers.items()}
            print_table(f"{label} ({half} half)", results, by_kind=True)
            report[label] = {n: {k: s.__dict__ for k, s in r.items()} for n, r in results.items()}
        if sweep:
            for label, make in (("notes", note_sweep), ("messages", message_sweep)):
                rankers = await make(hs)
                results = {name: await evaluate(r, hs.questions) for name, r in rankers.items()}
                print_table(f"{label} sweep ({half} half)", results, by_kind=False)
                report[f"{label} sweep"] = {
                    n: {k: s.__dict__ for k, s in r.items()} for n, r in results.items()
                }
        report["latency"] = await latency(hs)
    finally:
        await hs.db.close()
    return report


async def latency(hs: HalfStore) -> dict[str, float]:
    """Median ms per question of each words-only ranking (one run; the machine is shared)."""
    timings: dict[str, float] = {}
    for label, rankers in (("notes", note_rankers(hs)), ("messages", message_rankers(hs))):
        for name in ("plain FTS5 BM25 (reference)", "lorebot words"):
            samples = []
            for q in hs.questions:
                started = time.perf_counter()
                await rankers[name](q)
                samples.append(time.perf_counter() - started)
            timings[f"{label}: {name}"] = statistics.median(samples) * 1000
    print("\nmedian ms per question: " + ", ".join(f"{n} {v:.2f}" for n, v in timings.items()))
    return timings


class CachedEmbedder:
    """An embedder whose vectors are kept in a file between runs (`--cache`): MiniLM takes
    minutes for the ~11k texts of a half on this machine's two cores."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.vectors: dict[str, list[float]] = {}
        if path.exists():
            with path.open("rb") as file:
                self.vectors = pickle.load(file)

    @property
    def model(self) -> str:
        return str(self.inner.model)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            found = await self.inner.embed(missing)
            self.vectors.update(zip(missing, found, strict=True))
        return [self.vectors[t] for t in texts]

    def save(self) -> None:
        with self.path.open("wb") as file:
            pickle.dump(self.vectors, file)


def load_embedder(wanted: bool, cache: Path | None) -> Embedder | None:
    if not wanted:
        return None
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from recall_quality import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    except ImportError as exc:
        print(f"vectors skipped ({exc}): pip install -e '.[bench]'", file=sys.stderr)
        return None
    return embedder if cache is None else CachedEmbedder(embedder, cache)


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["first", "second", "both"], default="second")
    parser.add_argument("--sweep", action="store_true", help="the sweeps that chose the weights")
    parser.add_argument(
        "--weight-grid",
        action="store_true",
        help="only the note column weights: a grid, on this half and on recall_quality.py's "
        "notes; those at or above plain BM25 on both first",
    )
    parser.add_argument(
        "--ranks",
        action="store_true",
        help="only the rank of each question's first evidence turn, plain BM25 vs lorebot words",
    )
    parser.add_argument("--no-vectors", action="store_true", help="skip MiniLM")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--cache", type=Path, help="keep the MiniLM vectors in this file")
    args = parser.parse_args(argv)
    embedder = load_embedder(not (args.no_vectors or args.weight_grid or args.ranks), args.cache)
    halves = ["first", "second"] if args.half == "both" else [args.half]
    report: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory(prefix="lorebot-eval-") as tmp:
        for half in halves:
            report[half] = await run_half(
                HALVES[half], embedder, args.sweep, Path(tmp), args.weight_grid, args.ranks
            )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
