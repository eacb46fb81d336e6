"""Note search on PostgreSQL: bm25 over the notes' `tsvector` (`words.bm25_sql`) within what
the conversation may read, fused with the nearest vectors when they are on, and the
snippets (`ts_headline`) that show why a note matched. Weights and fusion come from
`memory.ranking`, as on SQLite."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory.clock import Clock
from memory.policy.visibility import Visibility
from memory.postgres.database import PostgresDatabase
from memory.postgres.session import POSTGRESQL
from memory.postgres.words import CONFIG, TableStats, bm25_sql, weights_params
from memory.ranking import FUSION_POOL, NOTE_WEIGHTS, Method, fuse, in_topic, note_terms
from memory.sql.note_rows import NOTE_COLUMNS, note_from_row, visible_notes
from memory.stores.vectors import NOTE, VectorIndex
from memory.types import Note, SearchHit

# Who may read a note, as named parameters `full` and `public` (lists of scopes).
VISIBLE = "(scope = ANY(%(full)s) OR (scope = ANY(%(public)s) AND NOT private))"
LIVE = "(expires_at IS NULL OR expires_at > %(now)s)"
# A note's length as FTS5 counts it: its words and the one or two tokens of its scope keys
# (`memory.policy.visibility.scope_keys`: private notes have one), so both engines rank alike.
LENGTH = "word_count + CASE WHEN private THEN 1 ELSE 2 END"


def note_fields(lexeme: str) -> str | None:
    """The fields a query word is looked for in, as `TableStats` takes them: summary (B)
    and body (C) for a number, every field otherwise (`ranking.in_topic`)."""
    return None if in_topic(lexeme) else "BC"


_RANKED = bm25_sql("notes", f"{VISIBLE} AND {LIVE}", length=LENGTH)
# The ranking with the notes it found, read in the same statement.
_RANKED_NOTES = (
    f"SELECT r.score, {', '.join(f'n.{c}' for c in NOTE_COLUMNS.split(', '))} "
    f"FROM ({_RANKED}) AS r JOIN notes AS n ON n.id = r.id ORDER BY r.score, r.id"
)
_WEIGHTS = weights_params(NOTE_WEIGHTS)
_SHOWN = "'StartSel=**, StopSel=**, MaxWords=16, MinWords=6, MaxFragments=1'"
# As SQLite's snippet(): the field that matched (the summary first), its words marked; the
# query's words as the ranking found them (`TableStats.params`).
_SNIPPETS = f"""
SELECT id, CASE
    WHEN to_tsvector('{CONFIG}', summary) @@ q THEN ts_headline('{CONFIG}', summary, q, {_SHOWN})
    WHEN to_tsvector('{CONFIG}', body) @@ q THEN ts_headline('{CONFIG}', body, q, {_SHOWN})
    ELSE ts_headline('{CONFIG}', replace(topic, '-', ' '), q, {_SHOWN}) END AS snippet
FROM notes, CAST(%(query)s AS tsquery) AS q WHERE id = ANY(%(ids)s)
"""


def visibility_params(visibility: Visibility) -> dict[str, list[str]]:
    return {
        "full": [str(s) for s in visibility.full],
        "public": [str(s) for s in visibility.public_only],
    }


@dataclass(frozen=True, slots=True)
class NoteSearch:
    """One search over the notes of a PostgreSQL database."""

    db: PostgresDatabase
    clock: Clock
    vectors: VectorIndex | None
    fusion: Method
    stats: TableStats

    async def top(
        self,
        query: str,
        visibility: Visibility,
        k: int,
        snippets: bool,
        vector: Sequence[float] | None,
    ) -> list[SearchHit]:
        """Top-k notes (k > 0) for `query` among what `visibility` may read, best first."""
        terms = " ".join(note_terms(query))
        if vector is None and self.vectors is not None and self.vectors.enabled:
            vector = await self.vectors.query_vector(query)
        pool = max(k * 4, FUSION_POOL) if vector is not None else k
        words = await self.stats.params(terms) if terms else None
        by_words = await self._ranked(words, visibility, pool) if words else []
        keyword = [(note.id, score) for note, score in by_words]
        near: list[tuple[int, float]] = []
        if vector is not None and self.vectors is not None:
            near = await self.vectors.nearest(NOTE, vector, visibility, pool)
        ranked = fuse(keyword, near, self.fusion)
        notes = {note.id: note for note, _ in by_words}
        if missing := [i for i, _ in ranked if i not in notes]:  # found by their vectors
            async with self.db.reading() as sql:
                notes |= await visible_notes(sql, missing, visibility, self.clock())
        found = [(notes[i], score) for i, score in ranked if i in notes][:k]
        marked = {}
        if snippets and words:
            marked = await self._snippets(words["query"], [n.id for n, _ in found])
        # A note found by its vector alone shows its summary; by words, where they are.
        return [
            SearchHit(note, score, marked.get(note.id) or (note.summary if near else ""))
            for note, score in found
        ]

    async def _ranked(
        self, words: dict[str, Any], visibility: Visibility, k: int
    ) -> list[tuple[Note, float]]:
        """The notes best matching `words` that `visibility` may read, with their scores."""
        params = {
            "limit": k,
            "now": self.clock(),
            **visibility_params(visibility),
            **_WEIGHTS,
            **words,
        }
        found = await self.db.rows(_RANKED_NOTES, params, prepare=False)
        return [(note_from_row(r, POSTGRESQL.read_time), float(r["score"])) for r in found]

    async def _snippets(self, query: str, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        found = await self.db.rows(_SNIPPETS, {"query": query, "ids": ids})
        return {r["id"]: r["snippet"] for r in found if "**" in (r["snippet"] or "")}
