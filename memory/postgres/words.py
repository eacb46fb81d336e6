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

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.ranking import BM25_B, BM25_K1, column_weights

if TYPE_CHECKING:
    from memory.postgres.database import PostgresDatabase

# How long the count of a table's documents and their mean length are used before they are
# counted again (a scan of the table, which would be half of a search's time), unless this
# process wrote to the table meanwhile. Another replica's writes shift them by little.
STATS_FOR_S = 10.0

# The configuration every `tsvector` of lorebot is made with (created by the baseline).
CONFIG = "lorebot"
LABELS = "ABCD"


def bm25_sql(table: str, filters: str, *, id_column: str = "id") -> str:
    """A query of (id, score) for the documents of `table` (with a `words` column) that
    hold a word of `%(text)s` and pass `filters`, best first, at most `%(limit)s`. It takes
    the named parameters `text`, `limit`, `w_a`…`w_d` (from `weights_params`), `docs` and
    `avgdl` (from `TableStats`) and those of `filters`. Scores are negative, lower better,
    as bm25() gives them on SQLite."""
    return f"""
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('{CONFIG}', %(text)s))
    WHERE strpos(lexeme, '''') = 0 AND strpos(lexeme, '\\') = 0
), stats AS (
    SELECT %(docs)s::float8 AS docs, %(avgdl)s::float8 AS avgdl
), idf AS MATERIALIZED (
    SELECT q.lexeme, greatest(ln((stats.docs - d.df + 0.5) / (d.df + 0.5)), 1e-6) AS idf
    FROM q CROSS JOIN stats CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS df FROM {table} WHERE words @@ quote_literal(q.lexeme)::tsquery
    ) AS d
), found AS MATERIALIZED (
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


class TableStats:
    """The number of documents of a word-indexed table and their mean length in words,
    as bm25 needs them: counted again after `STATS_FOR_S` or after `clear` (a write)."""

    def __init__(self, db: PostgresDatabase, table: str) -> None:
        self.db = db
        self.table = table
        self._counted: tuple[float, dict[str, float]] | None = None

    def clear(self) -> None:
        self._counted = None

    async def params(self) -> dict[str, float]:
        now = time.monotonic()
        if self._counted is None or now - self._counted[0] > STATS_FOR_S:
            [row] = await self.db.rows(
                "SELECT count(*)::float8 AS docs, greatest(avg(word_count), 1)::float8 "
                f"AS avgdl FROM {self.table}"
            )
            self._counted = (now, {"docs": row["docs"], "avgdl": row["avgdl"]})
        return self._counted[1]
