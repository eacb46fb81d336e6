"""Hybrid recall: word ranking fused with sqlite-vec vectors from (fake) Ollama embeddings.

Covers fusion order, scope isolation of vector hits, the embedding-model check that
stops with the database untouched, saves that wait in the queue while Ollama is down, and
re-embeddings that were interrupted (the CLI's kill-and-resume is in
tests/bot/cli/test_reembed_cli.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.model.ollama import OllamaEmbedder
from memory import NoteDraft, Scope, Viewer, Visibility, explicit, visibility_for
from memory.conversations import LogEntry
from memory.embeddings import EmbeddingState, note_text
from memory.errors import EmbeddingMismatch
from memory.ranking import fuse, rrf, weighted
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.reembed import reembed
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.vectors import NOTE
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock

EMBED = "embed-test"
OTHER = "other-embed"
DIM = 8

C1 = Scope.parse("channel:slack/C1")
C2 = Scope.parse("channel:slack/C2")
ALICE = Scope.parse("user:slack/UALICE")
BOB = Scope.parse("user:slack/UBOB")
T1 = Scope.parse("team:slack/T1")
T2 = Scope.parse("team:slack/T2")


def unit(axis: int, dim: int = DIM) -> list[float]:
    return [1.0 if i == axis else 0.0 for i in range(dim)]


def at_angle(degrees: float, dim: int = DIM) -> list[float]:
    """A unit vector in the plane of axes 0 and 1, `degrees` away from `unit(0)`."""
    rad = math.radians(degrees)
    return [math.cos(rad), math.sin(rad)] + [0.0] * (dim - 2)


async def close_embedder(embedder: OllamaEmbedder) -> None:
    """Close the embedder's HTTP pool (OllamaEmbedder has no close of its own)."""
    await embedder.aclose()


@dataclass
class Recall:
    db: SqliteDatabase
    vectors: SqlVectorIndex
    store: SqliteNoteStore
    fake: FakeOllama
    clock: FakeClock
    embedders: list[OllamaEmbedder] = field(default_factory=list)

    def embedder(self, model: str = EMBED) -> OllamaEmbedder:
        """A real Ollama embedder for the fake, closed after the test."""
        embedder = OllamaEmbedder(self.fake.url, model, timeout_s=5.0)
        self.embedders.append(embedder)
        return embedder

    def vector_of(self, draft: NoteDraft, vector: list[float]) -> NoteDraft:
        """Make the fake embed `draft` as `vector`; returns the draft."""
        self.fake.vectors[note_text(draft.topic, draft.summary, draft.body)] = vector
        return draft

    async def save(self, draft: NoteDraft) -> int:
        return (await self.store.save(draft, actor="test")).note.id


@pytest_asyncio.fixture
async def recall(fake_ollama: FakeOllama, db_path: Path, clock: FakeClock) -> AsyncIterator[Recall]:
    fake_ollama.models = [EMBED, OTHER]
    db = await SqliteDatabase.open(db_path, want_vectors=True)
    recall = Recall(
        db,
        SqlVectorIndex(db, None, SqliteVectorTables(db)),
        SqliteNoteStore(db),
        fake_ollama,
        clock,
    )
    try:
        recall.vectors = SqlVectorIndex(db, recall.embedder(), SqliteVectorTables(db))
        await recall.vectors.prepare()
        assert recall.vectors.enabled
        recall.store = SqliteNoteStore(db, clock=clock, vectors=recall.vectors)
        yield recall
    finally:
        await db.close()
        for embedder in recall.embedders:
            await close_embedder(embedder)


def topics(hits: Any) -> list[str]:
    return [hit.note.topic for hit in hits]


async def rows_of(db: SqliteDatabase, sql: str) -> list[tuple[Any, ...]]:
    async with db.conn.execute(sql) as cursor:
        return [tuple(r) for r in await cursor.fetchall()]


VECTOR_TABLE = re.compile(r"vec_(notes|messages)_\d+")


async def vector_tables(db: SqliteDatabase) -> dict[str, list[tuple[Any, ...]]]:
    """Every vector table's rows, sorted, whatever the tables' layout."""
    names = [r[0] for r in await rows_of(db, "SELECT name FROM sqlite_master")]
    return {
        name: sorted(await rows_of(db, f"SELECT * FROM {name}"), key=repr)
        for name in sorted(names)
        if VECTOR_TABLE.fullmatch(name)
    }


async def ids_with_vectors(
    db: SqliteDatabase, state: EmbeddingState, kind: str, scopes: tuple[Scope, ...]
) -> set[int]:
    """The items of `scopes` that have a vector in the tables of `state`."""
    index = SqlVectorIndex(db, None, SqliteVectorTables(db))
    index.state = state
    found = await index.nearest(kind, [1.0] * state.dim, explicit(scopes), 100_000)
    return {item for item, _ in found}


# --- fusion -----------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [None, 0.2, 0.5, 0.8])
def test_weighted_puts_an_item_in_both_rankings_above_items_in_one(weight: float | None) -> None:
    keyword = [(1, -3.0), (2, -2.9), (4, -1.0)]  # bm25: lower is better
    vector = [(3, 0.10), (2, 0.11), (5, 0.90)]  # cosine distance: lower is better

    fused = weighted(keyword, vector, weight)

    assert fused[0][0] == 2
    assert {i for i, _ in fused} == {1, 2, 3, 4, 5}
    # Last in one list and absent from the other: nothing of either list is left.
    assert sorted(fused[-2:]) == [(4, 0.0), (5, 0.0)]


def test_rrf_puts_an_item_in_both_rankings_above_items_in_one() -> None:
    fused = rrf([(1, -9.0), (2, -8.0)], [(3, 0.1), (2, 0.2)])

    assert [i for i, _ in fused] == [2, 1, 3]
    assert fused[0][1] == pytest.approx(2 / 62)


def test_weighted_normalises_each_ranking_to_zero_one() -> None:
    keyword = [(1, -10.0), (2, -5.0), (3, 0.0)]

    assert weighted(keyword, [], keyword_weight=1.0) == [(1, 1.0), (2, 0.5), (3, 0.0)]
    # Only the spread matters, not the scale of bm25 or of distances.
    scaled = [(i, s * 100) for i, s in keyword]
    assert weighted(scaled, [], keyword_weight=1.0) == weighted(keyword, [], keyword_weight=1.0)
    near = weighted([], [(7, 0.2), (8, 0.6), (9, 1.0)], keyword_weight=0.0)
    assert near == [(7, 1.0), (8, 0.5), (9, 0.0)]
    # A list whose scores are all equal gives them all full marks.
    assert weighted([(1, -2.0), (2, -2.0)], [], keyword_weight=1.0) == [(1, 1.0), (2, 1.0)]


def test_weighted_mixes_the_two_normalised_scores_by_the_weight() -> None:
    keyword = [(1, -4.0), (2, -2.0)]
    vector = [(2, 0.0), (1, 1.0)]

    assert dict(weighted(keyword, vector, keyword_weight=0.75)) == {1: 0.75, 2: 0.25}
    assert [i for i, _ in weighted(keyword, vector, keyword_weight=0.25)] == [2, 1]


@pytest.mark.parametrize("method", ["weighted", "rrf"])
def test_fuse_without_vectors_keeps_the_keyword_order(method: Any) -> None:
    keyword = [(5, -7.5), (3, -2.0), (9, -0.5)]

    assert fuse(keyword, [], method) == [(5, 7.5), (3, 2.0), (9, 0.5)]
    assert fuse([], [], method) == []


async def test_hybrid_search_lifts_the_nearest_note_above_a_weak_word_match(
    recall: Recall,
) -> None:
    query = "gateway certificate rotation"
    recall.fake.vectors[query] = unit(0)
    # B: every query word, vector a bit past right angles. C: one query word, vector at
    # right angles.
    # A: no query word, but its vector is the query's. D: neither, vector opposite.
    b = recall.vector_of(
        NoteDraft(C1, "gateway-certs", "gateway certificate rotation runs monthly"),
        at_angle(100),
    )
    c = recall.vector_of(NoteDraft(C1, "edge-proxy", "the edge proxy sits behind the gateway"),
                         unit(1))  # fmt: skip
    a = recall.vector_of(
        NoteDraft(C1, "tls-renewal", "TLS renewal is automated by cert-manager"), unit(0)
    )
    d = recall.vector_of(NoteDraft(C1, "lunch", "lunch is at noon on fridays"), at_angle(180))
    for draft in (b, c, a, d):
        await recall.save(draft)
    assert await recall.vectors.backfill() == 4
    view = visibility_for(Viewer(ALICE, C1))

    words_only = SqliteNoteStore(
        recall.db,
        clock=recall.clock,
        vectors=SqlVectorIndex(recall.db, None, SqliteVectorTables(recall.db)),
    )
    assert topics(await words_only.search(query, view, k=3)) == ["gateway-certs", "edge-proxy"]

    hybrid = await recall.store.search(query, view, k=3)
    # Whatever the keyword weight: the nearest note joins, above the weak word match, and
    # the note far from both rankings stays out.
    order = topics(hybrid)
    assert sorted(order) == ["edge-proxy", "gateway-certs", "tls-renewal"]
    assert order.index("tls-renewal") < order.index("edge-proxy")
    assert order.index("gateway-certs") < order.index("edge-proxy")
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)
    [renewal] = [h for h in hybrid if h.note.topic == "tls-renewal"]
    assert renewal.snippet == "TLS renewal is automated by cert-manager"  # no words to mark

    # A query with no word in any note is answered by vectors alone.
    unworded = "which tool keeps our https keys fresh"
    recall.fake.vectors[unworded] = at_angle(10)
    assert topics(await recall.store.search(unworded, view, k=1)) == ["tls-renewal"]
    assert await words_only.search(unworded, view, k=1) == []


# --- scope isolation --------------------------------------------------------------------

NEAR = "zulu-near-marker"
QUERY = "rollback procedure"

# Every note says the query words and embeds exactly as the query; each scope also has a
# note that only the vector finds. (scope, private) pairs:
PLACES = [
    (C1, False), (C2, False), (ALICE, False), (ALICE, True),
    (BOB, False), (BOB, True), (T1, False), (T2, False),
]  # fmt: skip


def may_read(viewer: Viewer, scope: Scope, private: bool) -> bool:
    """DESIGN's table, restated independently of memory.visibility."""
    if viewer.team is not None and scope == viewer.team:
        return True
    if viewer.channel is None:
        return scope == viewer.speaker
    return scope == viewer.channel or (scope == viewer.speaker and not private)


VIEWERS = [
    pytest.param(Viewer(ALICE, C1, T1), id="alice-in-c1-with-team"),
    pytest.param(Viewer(ALICE, C1), id="alice-in-c1"),
    pytest.param(Viewer(ALICE, None, T1), id="alice-dm-with-team"),
    pytest.param(Viewer(BOB, C2, T2), id="bob-in-c2-with-team2"),
]


@pytest.mark.parametrize("viewer", VIEWERS)
async def test_vector_hits_never_cross_scopes(recall: Recall, viewer: Viewer) -> None:
    recall.fake.vectors[QUERY] = unit(2)
    recall.fake.vectors_containing[NEAR] = unit(2)
    expected: set[int] = set()
    for number, (scope, private) in enumerate(PLACES):
        for topic, summary in ((f"rollback-{number}", f"{QUERY} number {number}"),
                               (f"quiet-{number}", f"quarterly planning {number}")):  # fmt: skip
            draft = NoteDraft(scope, topic, summary, body=NEAR, private=private)
            note_id = await recall.save(draft)
            if may_read(viewer, scope, private):
                expected.add(note_id)
    await recall.vectors.backfill()
    view = visibility_for(viewer)

    hits = await recall.store.search(QUERY, view, k=50)

    assert {h.note.id for h in hits} == expected  # vector-only notes included
    nearest = await recall.vectors.nearest(NOTE, unit(2), view, 50)
    assert {i for i, _ in nearest} == expected
    assert all(distance == pytest.approx(0.0, abs=1e-6) for _, distance in nearest)


async def test_a_note_turned_private_leaves_channel_recall_before_its_vector_is_redone(
    recall: Recall,
) -> None:
    recall.fake.vectors[QUERY] = unit(2)
    recall.fake.vectors_containing[NEAR] = unit(2)
    draft = NoteDraft(ALICE, "my-rollback", "personal notes", body=NEAR, private=True)
    await recall.save(draft)
    await recall.vectors.backfill()
    in_channel = visibility_for(Viewer(ALICE, C1))
    assert await recall.store.search(QUERY, in_channel) == []

    await recall.save(NoteDraft(ALICE, "my-rollback", "personal notes", body=NEAR))
    assert await recall.vectors.pending() == 1
    await recall.vectors.backfill()
    assert topics(await recall.store.search(QUERY, in_channel)) == ["my-rollback"]

    await recall.save(draft)  # private again: gone from channels at once, before any backfill
    assert await recall.store.search(QUERY, in_channel) == []
    await recall.vectors.backfill()
    assert await recall.vectors.nearest(NOTE, unit(2), in_channel, 5) == []


# --- the embedding model check ----------------------------------------------------------


async def snapshot(db: SqliteDatabase) -> dict[str, Any]:
    """Everything a model check could change, as plain data."""

    async def rows(sql: str) -> list[tuple[Any, ...]]:
        return await rows_of(db, sql)

    return {
        "user_version": await db.scalar("PRAGMA user_version"),
        "schema": await rows("SELECT type, name, sql FROM sqlite_master ORDER BY name"),
        "state": await rows("SELECT key, value FROM embedding_state ORDER BY key"),
        "queue": await rows("SELECT kind, item_id FROM embed_queue ORDER BY kind, item_id"),
        "notes": await rows("SELECT * FROM notes ORDER BY id"),
        "messages": await rows("SELECT * FROM messages ORDER BY id"),
        "vectors": await vector_tables(db),
    }


async def fill(recall: Recall) -> None:
    for n in range(3):
        await recall.save(NoteDraft(C1, f"note-{n}", f"summary {n}"))
    log = SqlConversationLog(recall.db, SqliteMessageSearch(recall.db), clock=recall.clock)
    await log.append("slack/C1/t1", [LogEntry("user", "hello", "user:slack/UALICE", "Alice"),
                                     LogEntry("assistant", "hi")], scope=str(C1))  # fmt: skip
    await recall.vectors.backfill()
    await recall.save(NoteDraft(C1, "queued", "saved after the backfill"))  # one left queued


@pytest.mark.parametrize(
    ("model", "dim", "configured"),
    [
        pytest.param(
            EMBED, 12, "embed-test:latest now returns 12 dimensions", id="other-dimension"
        ),
        pytest.param(OTHER, DIM, "other-embed:latest", id="other-model"),
    ],
)
async def test_another_embedding_model_stops_with_the_database_untouched(
    recall: Recall, model: str, dim: int, configured: str
) -> None:
    await fill(recall)
    before = await snapshot(recall.db)
    assert before["user_version"] > 0 and before["queue"] == [("note", 4)]
    assert {name: len(rows) for name, rows in before["vectors"].items()} == {
        "vec_notes_1": 3, "vec_messages_1": 2,
    }  # fmt: skip
    recall.fake.embedding_dim = dim
    probes = len(recall.fake.requests_to("/api/embed"))

    with pytest.raises(EmbeddingMismatch) as raised:
        await SqlVectorIndex(
            recall.db, recall.embedder(model), SqliteVectorTables(recall.db)
        ).prepare()

    message = str(raised.value)
    assert "embed-test:latest (8 dimensions)" in message
    assert configured in message
    assert "lorebot notes reembed" in message and "\n" not in message
    assert await snapshot(recall.db) == before
    if model == OTHER:  # known to differ by name: the model is not even asked
        assert len(recall.fake.requests_to("/api/embed")) == probes


async def test_the_same_model_again_reuses_the_stored_vectors(recall: Recall) -> None:
    await fill(recall)
    before = await snapshot(recall.db)

    again = SqlVectorIndex(
        recall.db, recall.embedder(f"{EMBED}:latest"), SqliteVectorTables(recall.db)
    )
    await again.prepare()

    assert again.enabled and again.state == recall.vectors.state
    assert await snapshot(recall.db) == before


async def test_a_query_vector_of_another_dimension_falls_back_to_words(recall: Recall) -> None:
    await recall.save(NoteDraft(C1, "pager", "the pager rotation changes on monday"))
    await recall.vectors.backfill()
    recall.fake.embedding_dim = 12  # the model changed under a running lorebot

    hits = await recall.store.search("pager rotation", visibility_for(Viewer(ALICE, C1)))

    assert topics(hits) == ["pager"]


# --- Ollama down ------------------------------------------------------------------------


async def test_saves_while_ollama_is_down_are_kept_then_embedded_by_backfill(
    recall: Recall,
) -> None:
    view = visibility_for(Viewer(ALICE, C1))
    vector_query = "who gets paged first"
    recall.fake.vectors[vector_query] = unit(3)
    escalation = recall.vector_of(
        NoteDraft(C1, "escalation-path", "Dana is the primary contact",
                  body="ten minutes without acknowledgement: Dana"),
        unit(3),
    )  # fmt: skip
    await recall.fake.down()

    saved = [await recall.save(escalation)]
    saved.append(await recall.save(NoteDraft(C1, "deploy-window", "deploys happen on tuesday")))
    saved.append(await recall.save(NoteDraft(ALICE, "editor", "vim for tuesday deploys")))

    assert sorted(n.id for n in await recall.store.list_notes()) == sorted(saved)
    assert await recall.vectors.pending() == 3
    # Words alone still find what was saved.
    assert set(topics(await recall.store.search("tuesday deploys", view))) == {
        "deploy-window", "editor",
    }  # fmt: skip
    assert await recall.store.search(vector_query, view) == []

    await recall.fake.up()
    assert await recall.store.search(vector_query, view) == []  # no note has a vector yet
    assert await recall.vectors.backfill() == 3
    assert await recall.vectors.pending() == 0

    hits = await recall.store.search(vector_query, view, k=1)
    assert topics(hits) == ["escalation-path"]


async def test_update_requeues_and_forget_drops_the_vector_on_backfill(recall: Recall) -> None:
    view = visibility_for(Viewer(ALICE, C1))
    recall.fake.vectors["old question"] = unit(4)
    recall.fake.vectors["new question"] = unit(5)
    first = recall.vector_of(NoteDraft(C1, "vpn", "vpn is vpn-1"), unit(4))
    second = recall.vector_of(NoteDraft(C1, "vpn", "vpn moved to vpn-2"), unit(5))
    near_new = [0.0] * 5 + [0.8, 0.6, 0.0]  # cosine distance 0.2 from "new question"
    note_id = await recall.save(first)
    await recall.save(recall.vector_of(NoteDraft(C1, "other", "something else"), near_new))
    await recall.vectors.backfill()
    assert topics(await recall.store.search("new question", view, k=1)) == ["other"]

    await recall.save(second)
    assert await recall.vectors.pending() == 1
    assert topics(await recall.store.search("new question", view, k=1)) == ["other"]
    await recall.vectors.backfill()
    assert topics(await recall.store.search("new question", view, k=1)) == ["vpn"]

    await recall.store.forget(C1, "vpn", actor="test")
    assert await recall.vectors.pending() == 1
    assert note_id in [i for i, _ in await recall.vectors.nearest(NOTE, unit(5), view, 10)]
    await recall.vectors.backfill()
    assert note_id not in [i for i, _ in await recall.vectors.nearest(NOTE, unit(5), view, 10)]
    assert await recall.vectors.pending() == 0


async def test_first_start_while_ollama_is_down_sets_vectors_up_once_it_answers(
    fake_ollama: FakeOllama, db_path: Path, clock: FakeClock
) -> None:
    fake_ollama.models = [EMBED]
    fake_ollama.vectors["who reviews terraform"] = unit(6)
    db = await SqliteDatabase.open(db_path, want_vectors=True)
    embedder = OllamaEmbedder(fake_ollama.url, EMBED, timeout_s=5.0)
    try:
        plain = SqliteNoteStore(db, clock=clock)
        draft = NoteDraft(C1, "infra-review", "Priya approves infrastructure changes")
        fake_ollama.vectors[note_text(draft.topic, draft.summary, draft.body)] = unit(6)
        await plain.save(draft, actor="test")  # saved before any embedding model was set
        await fake_ollama.down()
        vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
        store = SqliteNoteStore(db, clock=clock, vectors=vectors)

        await vectors.prepare()

        assert not vectors.enabled
        view = Visibility(full=(C1,), public_only=())
        assert topics(await store.search("infrastructure changes", view)) == ["infra-review"]
        await fake_ollama.up()
        await vectors.prepare()
        assert vectors.enabled and await vectors.pending() == 1  # the older note is queued
        assert await vectors.backfill() == 1
        assert topics(await store.search("who reviews terraform", view)) == ["infra-review"]
    finally:
        await db.close()
        await close_embedder(embedder)


# --- re-embedding, interrupted ----------------------------------------------------------

THIRD = "third-embed"


async def interrupt_reembed(recall: Recall, model: str, *, batches: int) -> None:
    """Start `reembed` to `model` in batches of two and stop it (as a kill would) while it
    waits for the answer after `batches` committed batches."""
    recall.fake.clear()
    recall.fake.hold_embeds(after=batches + 1)  # the dimension probe, then the batches
    task = asyncio.create_task(reembed(recall.db, recall.embedder(model), batch_size=2))
    try:
        await recall.fake.wait_for_requests(batches + 2, "/api/embed", within=10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        recall.fake.release_embeds()


async def six_notes(recall: Recall) -> list[int]:
    ids = [await recall.save(NoteDraft(C1, f"item-{n}", f"summary {n}")) for n in range(6)]
    await recall.vectors.backfill()
    return ids


async def test_an_abandoned_reembed_for_another_model_is_dropped(recall: Recall) -> None:
    recall.fake.models.append(THIRD)
    ids = await six_notes(recall)
    await interrupt_reembed(recall, OTHER, batches=1)
    state = dict(await rows_of(recall.db, "SELECT key, value FROM embedding_state"))
    assert (state["model"], state["next_model"]) == ("embed-test:latest", "other-embed:latest")

    result = await reembed(recall.db, recall.embedder(THIRD), batch_size=2)

    assert not result.resumed and result.embedded == {"note": 6, "message": 0}
    assert result.state == EmbeddingState("third-embed:latest", DIM, 3)
    assert set(await vector_tables(recall.db)) == {"vec_messages_3", "vec_notes_3"}
    assert await ids_with_vectors(recall.db, result.state, NOTE, (C1,)) == set(ids)
    assert dict(await rows_of(recall.db, "SELECT key, value FROM embedding_state")) == {
        "model": "third-embed:latest", "dim": str(DIM), "generation": "3",
    }  # fmt: skip


async def test_a_note_updated_while_a_reembed_is_paused_gets_its_new_vector(
    recall: Recall,
) -> None:
    ids = await six_notes(recall)
    await interrupt_reembed(recall, OTHER, batches=2)  # item-0 … item-3 have new vectors
    # lorebot runs on with the old model meanwhile, as it may: item-1 changes.
    recall.fake.vectors["what changed in item one"] = unit(3)
    await recall.save(recall.vector_of(NoteDraft(C1, "item-1", "changed summary"), unit(3)))
    await recall.vectors.backfill()

    await reembed(recall.db, recall.embedder(OTHER), batch_size=2)

    moved = SqlVectorIndex(recall.db, recall.embedder(OTHER), SqliteVectorTables(recall.db))
    await moved.prepare()
    view = visibility_for(Viewer(ALICE, C1))
    [(nearest, distance)] = await moved.nearest(NOTE, unit(3), view, 1)
    assert (nearest, distance) == (ids[1], pytest.approx(0.0, abs=1e-6))
    store = SqliteNoteStore(recall.db, clock=recall.clock, vectors=moved)
    assert topics(await store.search("what changed in item one", view, k=1)) == ["item-1"]


async def test_a_note_forgotten_while_a_reembed_is_paused_leaves_no_vector(
    recall: Recall,
) -> None:
    ids = await six_notes(recall)
    await interrupt_reembed(recall, OTHER, batches=2)
    await recall.store.forget(C1, "item-2", actor="test")
    await recall.vectors.backfill()

    result = await reembed(recall.db, recall.embedder(OTHER), batch_size=2)

    assert result.resumed
    assert await ids_with_vectors(recall.db, result.state, NOTE, (C1,)) == set(ids) - {ids[2]}
