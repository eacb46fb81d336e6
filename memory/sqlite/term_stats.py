"""Which query words bm25 gives no weight, so a large store's query can skip them.

FTS5's bm25 gives a word held by half the notes or more an IDF of 1e-6 (its formula would
go negative there), so such a word moves no note's score by more than a few millionths;
yet bm25 reads its whole posting list on every query, and in a large store that is most
of the query's time ("the", "is" and "we" in natural questions). Words held by more than
COMMON_SHARE of the notes are left out of the ranking query; the store runs the whole
query when what is left matches fewer notes than it needs, so the ranking is the one
plain bm25 gives. (Leaving out words held by only a tenth of the notes cost recall:
benchmarks/recall_eval.py.)

Counts are looked up once per word, counted only up to the threshold, and kept until the
store's size moves by a tenth; COMMON_SHARE sits above one half so that a count cached
before that change still leaves out only words bm25 does not weigh.
"""

from __future__ import annotations

from collections import OrderedDict

from memory.sql.session import Statement
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.fts import note_match

MIN_NOTES = 5_000
# bm25 stops weighing a word at 0.5; the margin covers counts cached while the store moved.
COMMON_SHARE = 0.6
CACHE_SIZE = 50_000
REFRESH_CHANGE = 0.1
RECOUNT_EVERY = 64


class TermStats:
    """Document frequencies of query words, for the note store's ranking."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._notes = 0
        self._size = 0
        self._calls = 0

    async def _note_count(self) -> int:
        # max(id) is at least the number of notes, so a share of it is never overstated.
        if self._calls % RECOUNT_EVERY == 0:
            self._size = int(await self.db.scalar("SELECT coalesce(max(id), 0) FROM notes"))
        self._calls += 1
        return self._size

    async def document_frequencies(self, terms: list[str], cap: int) -> dict[str, int]:
        """How many notes hold each of `terms`, counted up to `cap` only: past it the word
        is left out anyway, and counting on through its whole posting list is what costs.
        The words not kept yet are counted together, in one hop to the database."""
        counts = {}
        for term in terms:
            if term in self._counts:
                self._counts.move_to_end(term)
                counts[term] = self._counts[term]
        new = [term for term in dict.fromkeys(terms) if term not in counts]
        if new:
            async with self.db.reading() as sql:
                found = await sql.batch([_count(term, cap) for term in new])
            for term, result in zip(new, found, strict=True):
                counts[term] = self._counts[term] = int(result.rows[0]["n"])
            while len(self._counts) > CACHE_SIZE:
                self._counts.popitem(last=False)
        return counts

    async def weighed(self, terms: list[str]) -> list[str]:
        """`terms` without those bm25 gives no weight in this store (possibly none left)."""
        notes = await self._note_count()
        if notes < MIN_NOTES:
            return terms
        if abs(notes - self._notes) > self._notes * REFRESH_CHANGE:
            self._counts.clear()
            self._notes = notes
        cap = int(COMMON_SHARE * notes) + 1
        counts = await self.document_frequencies(terms, cap)
        return [term for term in terms if counts[term] < cap]


def _count(term: str, cap: int) -> Statement:
    return Statement(
        "SELECT count(*) AS n FROM (SELECT 1 FROM notes_fts WHERE notes_fts MATCH ? LIMIT ?)",
        (note_match([term]), cap),
    )
