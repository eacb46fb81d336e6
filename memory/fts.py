"""Turning arbitrary user text into a safe FTS5 query.

User text never reaches MATCH raw: quotes, AND/OR/NOT/NEAR, `*`, `-`, `:` and
parentheses are FTS5 syntax. Words are extracted and each is quoted as a string.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD_RE = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32

# Words so common in notes and questions that they only add noise and cost.
_STOPWORD_TEXT = """a an and are as at be but by do does for from has have how i in is it its me my
    of on or our so that the their then there these this to us was we what when where
    which who why will with you your"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


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
