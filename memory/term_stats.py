"""How many notes hold each query word, cached, to leave out words too common to matter.

FTS5's bm25 counts every note holding each query word, across the whole index, on every
query; a word in a tenth of a million notes costs milliseconds and adds almost nothing to
the ranking. Counts are looked up once per word and kept until the store grows by a
quarter; only large stores (at least MIN_NOTES) drop common words, and a query always
keeps its rarest word.
"""

from __future__ import annotations

from collections import OrderedDict

from memory.db import Database
from memory.fts import match_terms

MIN_NOTES = 5_000
COMMON_SHARE = 0.1
CACHE_SIZE = 50_000
REFRESH_GROWTH = 1.25
RECOUNT_EVERY = 64


class TermStats:
    """Document frequencies of query words, for the note store's recall."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._notes = 0
        self._size = 0
        self._calls = 0

    async def _note_count(self) -> int:
        # max(id) tracks the store's size closely enough here; read it now and then.
        if self._calls % RECOUNT_EVERY == 0:
            self._size = int(await self.db.scalar("SELECT coalesce(max(id), 0) FROM notes"))
        self._calls += 1
        return self._size

    async def document_frequency(self, term: str, cap: int) -> int:
        """How many notes hold `term`, counted up to `cap` only: past it the word is common
        anyway, and counting on through its whole posting list is what costs."""
        if term in self._counts:
            self._counts.move_to_end(term)
            return self._counts[term]
        expression = match_terms([term])
        count = int(
            await self.db.scalar(
                "SELECT count(*) FROM (SELECT 1 FROM notes_fts WHERE notes_fts MATCH ? LIMIT ?)",
                (expression, cap),
            )
        )
        self._counts[term] = count
        if len(self._counts) > CACHE_SIZE:
            self._counts.popitem(last=False)
        return count

    async def informative(self, terms: list[str]) -> list[str]:
        """`terms` without the ones held by more than COMMON_SHARE of a large store."""
        notes = await self._note_count()
        if notes < MIN_NOTES or len(terms) < 2:
            return terms
        if notes > self._notes * REFRESH_GROWTH:
            self._counts.clear()
            self._notes = notes
        cap = int(COMMON_SHARE * notes) + 1
        counts = {term: await self.document_frequency(term, cap) for term in terms}
        kept = [term for term in terms if counts[term] < cap]
        return kept or [min(terms, key=lambda term: counts[term])]
