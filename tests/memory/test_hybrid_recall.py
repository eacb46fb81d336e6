"""Hybrid recall: the word ranking fused with the nearest vectors, as the fusion computes
it and as a note search on each engine returns it (the vectors from the fake Ollama)."""

from __future__ import annotations

from typing import Any

import pytest

from memory import Viewer, visibility_for
from memory.ranking import fuse, rrf, weighted
from tests.support import pgvector
from tests.support.vector_stores import (
    ALICE,
    C1,
    VectorStores,
    at_angle,
    topics,
    unit,
    vector_database,
    vector_stores,
)

# The fixtures this module uses beyond tests/conftest.py's.
pgvector_server = pgvector.pgvector_server
pgvector_url = pgvector.pgvector_url
vector_database = vector_database
vector_stores = vector_stores


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
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    query = "gateway certificate rotation"
    vs.fake.vectors[query] = unit(0)
    # B: every query word, vector a bit past right angles. C: one query word, vector at
    # right angles.
    # A: no query word, but its vector is the query's. D: neither, vector opposite.
    await vs.note(
        C1, "gateway-certs", "gateway certificate rotation runs monthly", vector=at_angle(100)
    )
    await vs.note(C1, "edge-proxy", "the edge proxy sits behind the gateway", vector=unit(1))
    await vs.note(C1, "tls-renewal", "TLS renewal is automated by cert-manager", vector=unit(0))
    await vs.note(C1, "lunch", "lunch is at noon on fridays", vector=at_angle(180))
    assert await vs.vectors.backfill() == 4
    view = visibility_for(Viewer(ALICE, C1))

    words_only = vs.words_only()
    assert topics(await words_only.search(query, view, k=3)) == ["gateway-certs", "edge-proxy"]

    hybrid = await vs.notes.search(query, view, k=3)
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
    vs.fake.vectors[unworded] = at_angle(10)
    assert topics(await vs.notes.search(unworded, view, k=1)) == ["tls-renewal"]
    assert await words_only.search(unworded, view, k=1) == []
