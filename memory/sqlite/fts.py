"""Turning the words of a query (`memory.ranking`) into a safe FTS5 query.

User text never reaches MATCH raw: quotes, AND/OR/NOT/NEAR, `*`, `-`, `:` and
parentheses are FTS5 syntax. Words are extracted and each is quoted as a string.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.ranking import column_weights, in_topic


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_terms(terms: list[str], columns: str = "topic summary body") -> str | None:
    """An FTS5 expression matching any of `terms` in `columns` (of a note by default)."""
    if not terms:
        return None
    return f"{{{columns}}} : (" + " OR ".join(quote(term) for term in terms) + ")"


def note_match(terms: list[str]) -> str | None:
    """An FTS5 expression matching any of `terms` in a note: in topic, summary or body,
    numbers in summary or body only (`ranking.in_topic`)."""
    everywhere = [term for term in terms if in_topic(term)]
    parts = [
        match_terms(everywhere),
        match_terms([term for term in terms if not in_topic(term)], columns="summary body"),
    ]
    found = [part for part in parts if part is not None]
    return " OR ".join(found) or None


def bm25_call(table: str, weights: Sequence[float]) -> str:
    """A bm25() call on `table` weighing its word columns in proportion to `weights`, the
    heaviest at 1 (`ranking.column_weights`), and the scope-keys column after them at 0."""
    scaled = column_weights(weights)
    return f"bm25({table}, {', '.join(repr(float(w)) for w in scaled)}, 0.0)"
