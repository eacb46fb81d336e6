"""Ranking that every storage engine shares: the words of a query, the weights of each
field, and the fusion of a keyword ranking with a vector ranking.

An engine turns the words into its own full-text query (FTS5 MATCH on SQLite) and
scores them with its own keyword ranking; what is chosen here holds on every engine.

Fusion: `weighted` (the default, chosen by `benchmarks/recall_quality.py`) min-max
normalises each list's scores to 0..1 and adds them with a weight; an item missing from
a list scores 0 there. `rrf` (reciprocal rank fusion) uses ranks only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

_WORD_RE = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32

# Words so common in notes and questions that they only add noise and cost.
_STOPWORD_TEXT = """a an and are as at be but by do does for from has have how i in is it its me my
    of on or our so that the their then there these this to us was we what when where
    which who why will with you your"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Keyword weights of a note's topic, summary and body, relative to each other: scaled so
# the heaviest counts a word as plain bm25 does. Chosen by `benchmarks/recall_eval.py
# --half first --weight-grid`: the best MRR@10 on that half of the weightings at or above
# plain bm25 at hit@5, hit@10 and MRR@10 there and on recall_quality.py's notes. Every
# field keeps a weight, so a note found by its topic or body words alone scores.
NOTE_WEIGHTS = (1.0, 1.5, 1.0)
# Keyword weights of a message's content, the message before, the message after and the
# author, relative to each other (benchmarks/recall_eval.py --sweep).
CONTENT_WEIGHT = 1.0
BEFORE_WEIGHT = 0.75
AFTER_WEIGHT = 0.5
AUTHOR_WEIGHT = 1.0
# bm25's term-frequency saturation and length normalisation, FTS5's fixed values: an
# engine that computes bm25 itself (PostgreSQL) uses these so both rank alike.
BM25_K1 = 1.2
BM25_B = 0.75
# Candidates each ranking brings to a fusion.
FUSION_POOL = 20

Ranking = Sequence[tuple[int, float]]
Method = Literal["weighted", "rrf"]

# Share of the keyword score in `weighted` fusion (the rest is the vector score), for notes
# and for messages: chosen by benchmarks/recall_eval.py --sweep on its first half.
KEYWORD_WEIGHT = 0.8
MESSAGE_KEYWORD_WEIGHT = 0.9
RRF_K = 60


# --- the words of a query -------------------------------------------------------------


def query_terms(text: str) -> list[str]:
    """Distinct lowercase words of `text` in order, stopwords dropped unless nothing else."""
    words = [w.lower() for w in _WORD_RE.findall(text)]
    seen: dict[str, None] = {}
    for word in words:
        if word not in STOPWORDS:
            seen.setdefault(word, None)
    if not seen:
        seen = dict.fromkeys(words)
    return list(seen)[:MAX_QUERY_TERMS]


def ranking_terms(text: str) -> list[str]:
    """Distinct lowercase words of `text` for a bm25 ranking, stopwords included: bm25
    already weighs a common word by how rare it is, and dropping them measured worse than
    plain bm25 (benchmarks/recall_eval.py). Past MAX_QUERY_TERMS, content words come first."""
    words = list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(text)))
    if len(words) <= MAX_QUERY_TERMS:
        return words
    content = [w for w in words if w not in STOPWORDS]
    return (content + [w for w in words if w in STOPWORDS])[:MAX_QUERY_TERMS]


def _stem(word: str) -> str:
    # A crude stem so "deploys" and "deploying" meet "deploy"; only used for overlap.
    return word[:5]


def term_overlap(query: str, text: str) -> float:
    """The share of the query's content words that appear in `text` (0 when it has none)."""
    wanted = {_stem(w) for w in query_terms(query) if len(w) > 2}
    if not wanted:
        return 0.0
    present = {_stem(w.lower()) for w in _WORD_RE.findall(text)}
    return len(wanted & present) / len(wanted)


def column_weights(weights: Sequence[float]) -> list[float]:
    """`weights` scaled so the heaviest is 1 (all kept as they are when none is above 0).

    FTS5 adds a column's weight for every occurrence before bm25 saturates the count and
    marks long texts down. A weight above 1 counts one mention as several: it uses up the
    saturation at once, so a repeated word gains little over a single one and a long text
    is marked down less than plain bm25 marks it. At most 1, the heaviest column counts
    words as plain bm25 does, and the others count them less."""
    top = max(weights, default=0.0)
    return [w / top for w in weights] if top > 0 else list(weights)


# --- fusion ---------------------------------------------------------------------------


def _normalised(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {i: 1.0 if span == 0 else (s - low) / span for i, s in scores.items()}


def weighted(keyword: Ranking, vector: Ranking, keyword_weight: float | None = None) -> Ranking:
    """`keyword` holds bm25 scores (lower is better), `vector` cosine distances (lower is
    better); returns (id, fused score), best (highest) first."""
    if keyword_weight is None:
        keyword_weight = KEYWORD_WEIGHT
    words = _normalised({i: -score for i, score in keyword})
    near = _normalised({i: -distance for i, distance in vector})
    fused = {
        i: keyword_weight * words.get(i, 0.0) + (1 - keyword_weight) * near.get(i, 0.0)
        for i in words.keys() | near.keys()
    }
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def rrf(keyword: Ranking, vector: Ranking, k: int = RRF_K) -> Ranking:
    """Reciprocal rank fusion of two rankings given best first."""
    fused: dict[int, float] = {}
    for ranking in (keyword, vector):
        for rank, (item, _) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))


def fuse(
    keyword: Ranking,
    vector: Ranking,
    method: Method = "weighted",
    keyword_weight: float | None = None,
) -> Ranking:
    """One ranking, best first, from bm25 scores and cosine distances (`keyword_weight`:
    see `weighted`)."""
    if not vector:
        return [(i, -score) for i, score in keyword]
    if method == "rrf":
        return rrf(keyword, vector)
    return weighted(keyword, vector, keyword_weight)
