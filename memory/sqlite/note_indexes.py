"""The index of each scope (its best notes, one line each, within the caps), built from
the notes and cached until they change."""

from __future__ import annotations

import aiosqlite

from memory.clock import Clock
from memory.index import ScopeIndex, build_index
from memory.sqlite.database import SqliteDatabase, to_db_time
from memory.sqlite.note_sql import LIVE
from memory.types import Scope, index_line

# How many ranked notes of a scope are considered for its index; more never fit 40 lines.
_INDEX_CANDIDATES = 400


class ScopeIndexes:
    """The note store's scope indexes: cached until `clear` (a write through the store) or
    a commit by another process (SQLite's `data_version` moves)."""

    def __init__(self, db: SqliteDatabase, clock: Clock, *, max_lines: int, max_bytes: int) -> None:
        self.db = db
        self.clock = clock
        self._caps = {"max_lines": max_lines, "max_bytes": max_bytes}
        self._cached: dict[tuple[Scope, bool], ScopeIndex] = {}
        self._data_version: object = None

    async def get(self, scope: Scope, public_only: bool) -> ScopeIndex:
        """The cached index of one scope (only its public notes when `public_only`)."""
        await self._forget_stale()
        key = (scope, public_only)
        cached = self._cached.get(key)
        if cached is None:
            cached = self._cached[key] = await self.build(self.db.conn, scope, public_only)
        return cached

    def clear(self) -> None:
        """Forget every cached index: the notes changed."""
        self._cached.clear()

    async def _forget_stale(self) -> None:
        version = await self.db.scalar("PRAGMA data_version")
        if version != self._data_version:
            self._data_version = version
            self._cached.clear()

    async def build(
        self, conn: aiosqlite.Connection, scope: Scope, public_only: bool
    ) -> ScopeIndex:
        """The index of one scope as `conn` sees the notes now, uncached."""
        now = to_db_time(self.clock())
        private_filter = "AND private = 0" if public_only else ""
        async with conn.execute(
            f"SELECT topic, summary FROM notes WHERE scope = ? {private_filter} AND {LIVE} "
            "ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ?",
            (str(scope), now, _INDEX_CANDIDATES),
        ) as cursor:
            ranked = [index_line(topic, summary) for topic, summary in await cursor.fetchall()]
        index = build_index(scope, ranked, **self._caps)
        if len(ranked) == _INDEX_CANDIDATES:
            total = await self.db.scalar(
                f"SELECT count(*) FROM notes WHERE scope = ? {private_filter} AND {LIVE}",
                (str(scope), now),
            )
            index = ScopeIndex(scope, index.lines, int(total) - len(index.lines))
        return index
