"""Ranking by words on PostgreSQL: bm25, computed in SQL over the `tsvector` index, as FTS5
computes it on SQLite, so both engines rank alike (PostgreSQL's `ts_rank` is not bm25).

Every field is a weight label of one `tsvector` (a note's topic A, summary B, body C; a
message's content A, the message before B, after C, author D). Per document and query
word, each occurrence adds its field's weight (`memory.ranking`); bm25 saturates that sum
and marks long documents down; a word's idf comes from the number of documents holding it
(an index lookup per word). A document's length is its number of words (`word_count`,
kept beside its `tsvector`), as FTS5 counts a row's tokens.

The text search configuration `lorebot` is PostgreSQL's English stemmer without a stopword
list: as on SQLite (porter), common words are indexed, and bm25 weighs them by how rare
they are. User text reaches PostgreSQL only as a bound parameter of `to_tsvector`, never
as `tsquery` syntax.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.ranking import BM25_B, BM25_K1, column_weights

# The configuration every `tsvector` of lorebot is made with (created by the baseline).
CONFIG = "lorebot"
LABELS = "ABCD"


def bm25_sql(table: str, filters: str, *, id_column: str = "id") -> str:
    """A query of (id, score) for the documents of `table` (with a `words` column) that
    hold a word of `%(text)s` and pass `filters`, best first, at most `%(limit)s`. It takes
    the named parameters `text`, `limit`, `w_a`…`w_d` (from `weights_params`) and those of
    `filters`. Scores are negative, lower better, as bm25() gives them on SQLite."""
    return f"""
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('{CONFIG}', %(text)s))
    WHERE strpos(lexeme, '''') = 0 AND strpos(lexeme, '\\') = 0
), stats AS (
    SELECT count(*)::float8 AS docs, greatest(avg(word_count), 1)::float8 AS avgdl
    FROM {table}
), idf AS (
    SELECT q.lexeme, greatest(ln((stats.docs - d.df + 0.5) / (d.df + 0.5)), 1e-6) AS idf
    FROM q CROSS JOIN stats CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS df FROM {table} WHERE words @@ quote_literal(q.lexeme)::tsquery
    ) AS d
), found AS (
    SELECT {id_column} AS id, words, word_count::float8 AS dl FROM {table}
    WHERE words @@ (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery FROM q)
    AND ({filters})
)
SELECT found.id, -sum(
    idf.idf * f.f * ({BM25_K1} + 1) / (f.f + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * found.dl
    / stats.avgdl))
) AS score
FROM found CROSS JOIN stats CROSS JOIN LATERAL unnest(found.words) AS u
JOIN idf ON idf.lexeme = u.lexeme
CROSS JOIN LATERAL (
    SELECT sum(CASE w WHEN 'A' THEN %(w_a)s WHEN 'B' THEN %(w_b)s WHEN 'C' THEN %(w_c)s
        ELSE %(w_d)s END)::float8 AS f
    FROM unnest(u.weights) AS w
) AS f
GROUP BY found.id ORDER BY score, found.id LIMIT %(limit)s
"""


def weights_params(weights: Sequence[float]) -> dict[str, float]:
    """The field weights as `bm25_sql` takes them, scaled as on SQLite (the heaviest 1)."""
    scaled = [*column_weights(weights), 0.0, 0.0, 0.0, 0.0][: len(LABELS)]
    return {f"w_{label.lower()}": weight for label, weight in zip(LABELS, scaled, strict=True)}


def document_sql(*fields: str) -> str:
    """A `tsvector` of the SQL expressions `fields` (split into words as on SQLite),
    labelled A, B, … in order."""
    return " || ".join(
        f"setweight(to_tsvector('{CONFIG}', lorebot_words({field})), '{label}')"
        for field, label in zip(fields, LABELS, strict=False)
    )


def word_count_sql(*fields: str) -> str:
    """How many words the SQL expressions `fields` hold together (bm25's length)."""
    joined = " || ' ' || ".join(fields)
    return f"lorebot_word_count({joined})"
