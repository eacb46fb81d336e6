"""bm25 as both engines compute it: FTS5's constants, which PostgreSQL's bm25
(`memory/postgres/words.py`) uses too, and the scaling of field weights."""

from __future__ import annotations

from collections.abc import Sequence

K1 = 1.2
B = 0.75


def column_weights(weights: Sequence[float]) -> list[float]:
    """Field weights scaled so the heaviest is 1: each occurrence of a word adds its field's
    weight before bm25 saturates the count. A weight above 1 would count one mention as
    several, using up the saturation at once (a repeated word would gain little over a
    single one, and a long text be marked down less than plain bm25 marks it); at most 1,
    the heaviest field counts words as plain bm25 does, and the others count them less."""
    top = max(weights, default=0.0)
    return [w / top for w in weights] if top > 0 else list(weights)
