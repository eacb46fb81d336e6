"""Turning the words of a query (`memory.ranking`) into a safe FTS5 query.

User text never reaches MATCH raw: quotes, AND/OR/NOT/NEAR, `*`, `-`, `:` and
parentheses are FTS5 syntax. Words are extracted and each is quoted as a string.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.ranking import query_terms


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_terms(terms: list[str], columns: str = "topic summary body") -> str | None:
    """An FTS5 expression matching any of `terms` in `columns` (of a note by default)."""
    if not terms:
        return None
    return f"{{{columns}}} : (" + " OR ".join(quote(term) for term in terms) + ")"


def bm25_call(table: str, weights: Sequence[float]) -> str:
    """A bm25() call on `table` weighing its word columns in proportion to `weights`, the
    heaviest at 1, and the scope-keys column after them at 0."""
    # FTS5 adds a column's weight for every occurrence before bm25 saturates the count
    # and marks long texts down. A weight above 1 counts one mention as several: it uses
    # up the saturation at once, so a repeated word gains little over a single one and a
    # long text is marked down less than plain bm25 marks it. At most 1, the heaviest
    # column counts words as plain bm25 does, and the others count them less.
    top = max(weights, default=0.0)
    scaled = [w / top for w in weights] if top > 0 else list(weights)
    return f"bm25({table}, {', '.join(repr(float(w)) for w in scaled)}, 0.0)"


def match_expression(text: str) -> str | None:
    """An FTS5 expression matching any word of `text` in topic, summary or body, or None
    when the text has no words."""
    return match_terms(query_terms(text))
