"""Note search: the bm25 ranking by words (FTS5), its fusion with the nearest vectors, and
the snippets that show why a note matched.

Ranking runs on note ids only; notes and snippets are read for the top k alone."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from memory.clock import Clock
from memory.policy.visibility import Visibility, scope_match
from memory.ranking import FUSION_POOL, NOTE_WEIGHTS, Method, fuse, note_terms
from memory.sql.note_rows import NOTE_COLUMNS, note_from_row, visibility_sql, visible_notes
from memory.sqlite.database import SqliteDatabase, to_db_time
from memory.sqlite.fts import bm25_call, note_match
from memory.sqlite.session import SQLITE
from memory.sqlite.term_stats import TermStats
from memory.stores.vectors import NOTE, VectorIndex
from memory.types import Note, SearchHit

_BM25 = bm25_call("notes_fts", NOTE_WEIGHTS)
_PREFIXED = ", ".join(f"n.{column.strip()}" for column in NOTE_COLUMNS.split(","))
# Up to this many scopes, the word index keeps to them itself; beyond (an admin in the web
# console reads every scope) an OR of that many keys costs more than it saves, and the
# SELECT alone keeps to the visible notes.
MATCHED_SCOPES = 64
# Candidates beyond k, for expired notes the maintenance job has not purged yet; when more
# than these drop out, the ranking is read again further down.
_SPARE = 5
# Below this, a bm25 score comes only from words held by about half the notes or more,
# which bm25 weighs 1e-6 (at most ~2e-6 per word and note): the order of such notes needs
# every word of the query.
_UNWEIGHED_SCORE = 1e-3


@dataclass(frozen=True, slots=True)
class NoteSearch:
    """One search over the notes, with the note store's database, clock, term statistics,
    vector index (None: words alone rank) and fusion method."""

    db: SqliteDatabase
    clock: Clock
    term_stats: TermStats
    vectors: VectorIndex | None
    fusion: Method

    async def top(
        self,
        query: str,
        visibility: Visibility,
        k: int,
        snippets: bool,
        vector: Sequence[float] | None,
    ) -> list[SearchHit]:
        """Top-k notes (k > 0) for `query` among what `visibility` may read, best first,
        as `NoteStore.search` describes; reads nothing it would have to write back."""
        terms = note_terms(query)
        words = _Words(note_match(await self.term_stats.weighed(terms)), note_match(terms))
        if vector is None and self.vectors is not None and self.vectors.enabled:
            vector = await self.vectors.query_vector(query)
        if vector is not None:
            return await self._hybrid(words, vector, visibility, k, snippets)
        if words.every is None:
            return []
        return await self._by_words(words, visibility, k, snippets)

    async def _hybrid(
        self,
        words: _Words,
        vector: Sequence[float],
        visibility: Visibility,
        k: int,
        snippets: bool,
    ) -> list[SearchHit]:
        assert self.vectors is not None
        pool = max(k * 4, FUSION_POOL)
        # The vector query runs on the reader while the word query runs on the writer.
        nearest = asyncio.ensure_future(
            self.vectors.nearest(NOTE, vector, visibility, pool, on_reader=True)
        )
        try:
            by_words = await self._ranked(words, visibility, pool)
        finally:
            near = await nearest
        notes = {note.id: note for note, _ in by_words}
        keyword = [(note.id, score) for note, score in by_words]
        ranked = fuse(keyword, near, self.fusion)
        # Nearest vectors may belong to expired notes: check every candidate, not a prefix.
        missing = [i for i, _ in ranked if i not in notes]
        # Not the store's reads: a search must not flush deferred access counts (a write).
        async with self.db.reading() as sql:
            now = to_db_time(self.clock())
            notes.update(await visible_notes(sql, missing, visibility, now))
        found = [(notes[i], score) for i, score in ranked if i in notes][:k]
        marked = {}
        if snippets and words.shown is not None:
            marked = await self._snippets(words.shown, [n.id for n, _ in found])
        return [SearchHit(n, score, marked.get(n.id) or n.summary) for n, score in found]

    async def _by_words(
        self, words: _Words, visibility: Visibility, k: int, snippets: bool
    ) -> list[SearchHit]:
        ranked = await self._ranked(words, visibility, k)
        ids = [n.id for n, _ in ranked]
        marked = await self._snippets(words.shown, ids) if snippets and words.shown else {}
        return [SearchHit(note, -score, marked.get(note.id, "")) for note, score in ranked]

    async def _ranked(
        self, words: _Words, visibility: Visibility, k: int
    ) -> list[tuple[Note, float]]:
        """The bm25 top k: by the weighed words when they find k notes that match one of
        them for real (the other words would only add millionths), else by every word, as
        plain bm25 would."""
        ranked: list[tuple[Note, float]] = []
        if words.weighed is not None:
            ranked = await self._ranked_by_words(words.weighed, visibility, k)
            if len(ranked) == k and -ranked[-1][1] > _UNWEIGHED_SCORE:
                return ranked
        if words.every is not None and words.every != words.weighed:
            ranked = await self._ranked_by_words(words.every, visibility, k)
        return ranked

    async def _ranked_by_words(
        self, words: str, visibility: Visibility, k: int
    ) -> list[tuple[Note, float]]:
        """The k best live notes matching `words` that `visibility` may read, with their
        bm25 scores (lower is better)."""
        where, params = visibility_sql(visibility, alias="n.")
        match = words
        if len(visibility.scopes) <= MATCHED_SCOPES:
            match = f"{scope_match(visibility)} AND {words}"
        now = to_db_time(self.clock())
        sql = (
            f"WITH top AS (SELECT rowid AS id, {_BM25} AS score FROM notes_fts "
            "WHERE notes_fts MATCH ? ORDER BY score LIMIT ?) "
            f"SELECT {_PREFIXED}, top.score, ({where}) AND "
            "(n.expires_at IS NULL OR n.expires_at > ?) AS readable "
            "FROM top JOIN notes n ON n.id = top.id ORDER BY top.score"
        )
        # The MATCH admits the visible scopes already (up to MATCHED_SCOPES of them); the
        # SELECT checks visibility again and drops expired notes. Should more than the
        # spare candidates drop out, the ranking is read again further down, so no match
        # is ever lost to them.
        limit = k + _SPARE
        while True:
            async with self.db.reading() as session:
                found = await session.rows(sql, (match, limit, *params, now))
            kept = [
                (note_from_row(r, SQLITE.read_time), float(r["score"]))
                for r in found
                if r["readable"]
            ]
            if len(kept) >= k or len(found) < limit:
                return kept[:k]
            limit *= 4

    async def _snippets(self, words: str, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        async with self.db.reading() as session:
            found = await session.rows(
                "SELECT rowid AS id, snippet(notes_fts, -1, '**', '**', '…', 16) AS snippet "
                f"FROM notes_fts WHERE notes_fts MATCH ? AND rowid IN ({marks})",
                (words, *ids),
            )
        return {row["id"]: row["snippet"] for row in found}


@dataclass(frozen=True, slots=True)
class _Words:
    """A query's FTS5 expressions: of the words bm25 weighs here, and of every word."""

    weighed: str | None
    every: str | None

    @property
    def shown(self) -> str | None:
        """The words a snippet marks."""
        return self.weighed or self.every
