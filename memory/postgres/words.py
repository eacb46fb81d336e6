"""Ranking by words on PostgreSQL: bm25, computed in SQL over the `tsvector` index, as FTS5
computes it on SQLite, so both engines rank alike (PostgreSQL's `ts_rank` is not bm25).

Every field is a weight label of one `tsvector` (a note's topic A, summary B, body C; a
message's content A, the message before B, after C, author D). Per document and query
word, each occurrence adds its field's weight (`memory.ranking`); bm25 saturates that sum
and marks long documents down; a word's idf comes from the number of documents holding it
(an index lookup per word, kept for a while; for common words, the statistics ANALYZE
keeps). A document's length is its number of words (`word_count`, kept beside its
`tsvector`) and of the scope keys FTS5 also counts (each table's `length` expression), as
FTS5 counts a row's tokens. A table may look for some words in some fields only (a note's
numbers, not in its topic: `memory.ranking.in_topic`), as an FTS5 column filter does.

The text search configuration `lorebot` is PostgreSQL's English stemmer without a stopword
list: as on SQLite (porter), common words are indexed, and bm25 weighs them by how rare
they are. User text reaches PostgreSQL only as a bound parameter of `to_tsvector`, never
as `tsquery` syntax.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memory.ranking import BM25_B, BM25_K1, column_weights

if TYPE_CHECKING:
    from memory.postgres.database import Connection, PostgresDatabase

# How long the count of a table's documents, their mean length and the number holding each
# query word are used before they are counted again (a scan of the table and an index
# lookup per word, most of a search's time), unless this process wrote to the table
# meanwhile. Another replica's writes shift them by little.
STATS_FOR_S = 10.0

# A word held by at least this many documents by the statistics is not counted through the
# index: that would read as many rows, and the notes written since ANALYZE move its count
# by a small share (autovacuum analyzes again after about a tenth of the table changed).
COUNTED_FROM_STATS = 1000

# The configuration every `tsvector` of lorebot is made with (created by the baseline).
CONFIG = "lorebot"
LABELS = "ABCD"


def bm25_sql(table: str, filters: str, *, id_column: str = "id", length: str = "word_count") -> str:
    """A query of (id, score) for the documents of `table` (with a `words` column) that
    hold one of the words `%(lexemes)s` (each in the fields `%(fields)s` names) and pass
    `filters`, best first, at most `%(limit)s`. It takes the named parameters of
    `TableStats.params` (the words, their fields and idf, the mean length), `limit`,
    `w_a`…`w_d` (from `weights_params`) and those of `filters`. Scores are negative,
    lower better, as bm25() gives them on SQLite. `length` is a document's length in
    tokens (as `TableStats` is given it).

    Run it unprepared (`prepare=False`): the planner then sees the words, and by their
    share in the statistics chooses between the word index and the filters' indexes (a
    generic plan would read the word index for every note holding a common word)."""
    return f"""
WITH q AS (
    SELECT * FROM unnest(%(lexemes)s::text[], %(idf)s::float8[], %(fields)s::text[])
        AS q (lexeme, idf, fields)
), found AS MATERIALIZED (
    -- Each document's words cut down to the query's (two ts_delete, in C): unnesting all
    -- of a document's words would be most of the query's time.
    SELECT {id_column} AS id, ({length})::float8 AS dl,
        ts_delete(words, tsvector_to_array(ts_delete(words, %(lexemes)s::text[]))) AS words
    FROM {table}
    WHERE words @@ %(query)s::tsquery AND ({filters})
)
SELECT found.id, -sum(
    q.idf * f.f * ({BM25_K1} + 1) / (f.f + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * found.dl
    / %(avgdl)s::float8))
) AS score
FROM found CROSS JOIN LATERAL unnest(found.words) AS u
JOIN q ON q.lexeme = u.lexeme
CROSS JOIN LATERAL (
    -- An occurrence in a field the word is not looked for in adds nothing (as an FTS5
    -- column filter leaves it out).
    SELECT sum(CASE WHEN strpos(q.fields, w) = 0 THEN 0 WHEN w = 'A' THEN %(w_a)s
        WHEN w = 'B' THEN %(w_b)s WHEN w = 'C' THEN %(w_c)s ELSE %(w_d)s END)::float8 AS f
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
    """What bm25 needs of a word-indexed table besides its documents: their number and
    mean length, and how many hold each query word (FTS5 reads these from its index; here
    they are a scan and an index lookup per word, kept). Counted again after `STATS_FOR_S`
    or after `clear` (a write of many documents); `added` keeps them for a few."""

    # A query's words as the index holds them; a word with a quote or a backslash is left
    # out (it would need tsquery escaping, and no English word has one).
    _LEXEMES = f"""
        SELECT DISTINCT lexeme FROM unnest(to_tsvector('{CONFIG}', %s))
        WHERE strpos(lexeme, '''') = 0 AND strpos(lexeme, chr(92)) = 0"""

    def __init__(
        self,
        db: PostgresDatabase,
        table: str,
        length: str = "word_count",
        fields_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.db = db
        self.table = table
        self.length = length  # a document's length in tokens, an SQL expression
        # The labels of the fields a query word is looked for in, when not all of them.
        self.fields_of = fields_of or (lambda lexeme: None)
        self._counted_at: float | None = None
        self._docs = 0.0
        self._avgdl = 1.0
        self._common: dict[str, float] = {}  # the share of documents holding a common word
        self._holding: dict[str, int] = {}  # documents holding a rarer word, counted

    def clear(self) -> None:
        self._counted_at = None

    def added(self, documents: int) -> None:
        """`documents` new documents by this process: counted in, without a scan of the
        table (a turn's messages would cost one each turn); the words they hold are
        counted again when asked."""
        self._docs += documents
        self._holding = {}

    async def params(self, text: str) -> dict[str, Any] | None:
        """`bm25_sql`'s parameters for the query `text`: its words, their idf and the
        table's mean length; None when `text` has no word the index could hold."""
        async with self.db.connection() as conn:
            found = await (await conn.execute(self._LEXEMES, (text,))).fetchall()
            lexemes = sorted(row["lexeme"] for row in found)
            if not lexemes:
                return None
            now = time.monotonic()
            if self._counted_at is None or now - self._counted_at > STATS_FOR_S:
                await self._count(conn)
                self._counted_at = now
            matching = {lexeme: self._tsquery(lexeme) for lexeme in lexemes}
            # Read once, before the next wait: a concurrent turn's `added` or `_count`
            # may replace the kept counts while this query's are fetched.
            shares = {lexeme: self._share(lexeme) for lexeme in lexemes}
            held = {w: self._holding[w] for w in lexemes if w in self._holding}
            unknown = [w for w in lexemes if shares[w] is None and w not in held]
            if unknown:
                holding = await conn.execute(
                    f"SELECT l AS lexeme, (SELECT count(*) FROM {self.table} "
                    "WHERE words @@ m::tsquery) AS df "
                    "FROM unnest(%s::text[], %s::text[]) AS u (l, m)",
                    (unknown, [matching[w] for w in unknown]),
                )
                counted = {r["lexeme"]: int(r["df"]) for r in await holding.fetchall()}
                self._holding.update(counted)
                held.update(counted)
        docs = self._docs
        idf = [
            bm25_idf(docs, held[w] if (share := shares[w]) is None else share * docs)
            for w in lexemes
        ]
        return {
            "lexemes": lexemes,
            "idf": idf,
            "fields": [self.fields_of(lexeme) or LABELS for lexeme in lexemes],
            "avgdl": self._avgdl,
            "query": " | ".join(matching[lexeme] for lexeme in lexemes),
        }

    def _tsquery(self, lexeme: str) -> str:
        """A tsquery of the plain `lexeme` (none holds a quote or a backslash: see
        _LEXEMES) in the fields it is looked for in."""
        fields = self.fields_of(lexeme)
        return f"'{lexeme}':{fields}" if fields else f"'{lexeme}'"

    def _share(self, lexeme: str) -> float | None:
        """The share of documents holding `lexeme` by the statistics, when it is one of
        the words counted there and held by so many documents that counting them would
        cost (a word of a few notes moves a lot with the notes written since ANALYZE).
        None for a word looked for in some fields only: the statistics count every field."""
        if self.fields_of(lexeme):
            return None
        share = self._common.get(lexeme)
        return share if share is not None and share * self._docs >= COUNTED_FROM_STATS else None

    async def _count(self, conn: Connection) -> None:
        """The table's documents and mean length; and how many documents hold its most
        common words, from the statistics ANALYZE keeps (`pg_stats`, from a sample of the
        table): counting those through the index would read thousands of rows per word,
        and a sample's share moves their small idf by about a percent."""
        cursor = await conn.execute(
            f"SELECT count(*)::float8 AS docs, greatest(avg({self.length}), 1)::float8 AS avgdl "
            f"FROM {self.table}"
        )
        totals = await cursor.fetchone()
        assert totals is not None
        self._docs, self._avgdl, self._holding = totals["docs"], totals["avgdl"], {}
        cursor = await conn.execute(
            "SELECT most_common_elems::text::text[] AS words, most_common_elem_freqs AS freqs "
            "FROM pg_stats WHERE schemaname = current_schema() AND tablename = %s "
            "AND attname = 'words'",
            (self.table,),
        )
        common = await cursor.fetchone()
        self._common = {}
        if common is not None and common["words"] is not None:  # else not analyzed yet
            # The shares of the words, then the least and the greatest (not paired).
            self._common = dict(zip(common["words"], common["freqs"], strict=False))


def bm25_idf(docs: float, holding: float) -> float:
    """FTS5's idf: a word held by half the documents or more weighs almost nothing."""
    holding = min(holding, docs)  # counts taken at different moments
    return max(math.log((docs - holding + 0.5) / (holding + 0.5)), 1e-6)
