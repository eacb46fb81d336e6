"""Fusing a keyword ranking with a vector ranking into one.

`weighted` (the default, chosen by `benchmarks/recall_quality.py`) min-max normalises each
list's scores to 0..1 and adds them with a weight; an item missing from a list scores 0
there. `rrf` (reciprocal rank fusion) uses ranks only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Ranking = Sequence[tuple[int, float]]
Method = Literal["weighted", "rrf"]

# Share of the keyword score in `weighted` fusion (the rest is the vector score), for notes
# and for messages: chosen by benchmarks/recall_eval.py --sweep on its first half.
KEYWORD_WEIGHT = 0.8
MESSAGE_KEYWORD_WEIGHT = 0.9
RRF_K = 60


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
