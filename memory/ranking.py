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

# NLTK's English stopword list (nltk.corpus.stopwords.words("english")), which a note
# search leaves out of its bm25 query: in short notes "what", "did" and "her" are rare
# enough for bm25 to weigh them, and they pushed out the notes that answer (7 points of
# hit@10 on REALTALK's first half, benchmarks/public_eval.py).
_ENGLISH_STOPWORD_TEXT = """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
"""
ENGLISH_STOPWORDS = frozenset(_ENGLISH_STOPWORD_TEXT.split())

# Keyword weights of a note's topic, summary and body, relative to each other: equal, as
# plain bm25 counts every column. Chosen by `benchmarks/public_eval.py` on the first halves
# of the ops set and REALTALK (a grid of topic 0-1 and summary 0.75-1.25): a summary
# weighed above the body lost 1-3 points of hit@10 on REALTALK, whose summary repeats the
# turn's first words, and the topic's weight moved nothing on either set.
NOTE_WEIGHTS = (1.0, 1.0, 1.0)
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


def note_terms(text: str) -> list[str]:
    """Distinct lowercase words of `text` for the bm25 ranking of notes: NLTK's English
    stopwords left out (all words when nothing else is left), at most MAX_QUERY_TERMS."""
    words = list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(text)))
    content = [w for w in words if w not in ENGLISH_STOPWORDS] or words
    return content[:MAX_QUERY_TERMS]


def in_topic(term: str) -> bool:
    """Whether a note search looks for the query word `term` in a note's topic too, not
    only in its summary and body: numbers are not. A topic is a slug whose numbers are
    dates and sequence numbers ("deploys-2024-03-15-0042"), which the version numbers and
    counts of a question matched instead of the notes that hold them (ops set, first half:
    5 questions ranked lower than plain FTS5 over summary and body, 0 after;
    benchmarks/public_eval.py)."""
    return not term.isdigit()


def ranking_terms(text: str) -> list[str]:
    """Distinct lowercase words of `text` for the bm25 ranking of messages, stopwords
    included: bm25 already weighs a common word by how rare it is, and a message's
    neighbours make it long enough that dropping them measured worse
    (benchmarks/recall_eval.py). Past MAX_QUERY_TERMS, content words come first."""
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
