"""The index of each scope (its best notes, one line each, within the caps), built from
the notes, and cached until they change where the engine can tell when another connection
wrote (`NoteEngine.data_version`); elsewhere read fresh."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from memory.clock import Clock
from memory.sql.note_engine import NoteEngine
from memory.sql.note_rows import LIVE
from memory.sql.session import Session, Statement
from memory.stores.index import ScopeIndex, build_index
from memory.types import Scope, index_line

# How many ranked notes of a scope are considered for its index; more never fit 40 lines.
_INDEX_CANDIDATES = 400


class ScopeIndexes:
    """The note store's scope indexes: cached until `clear` (a write through the store) or
    a commit by another connection, where the engine tells."""

    def __init__(
        self,
        engine: NoteEngine,
        clock: Clock,
        time: Callable[[datetime], object],
        *,
        max_lines: int,
        max_bytes: int,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.time = time  # `Dialect.time`
        self._caps = {"max_lines": max_lines, "max_bytes": max_bytes}
        self._cached: dict[tuple[Scope, bool], ScopeIndex] = {}
        self._data_version: object = None

    async def get(self, sql: Session, wanted: Sequence[tuple[Scope, bool]]) -> list[ScopeIndex]:
        """The index of each (scope, only its public notes) wanted."""
        version = await self.engine.data_version(sql)
        if version is None or version != self._data_version:
            self._cached.clear()
            self._data_version = version
        missing = [w for w in dict.fromkeys(wanted) if w not in self._cached]
        built = await self._build_all(sql, missing)
        if version is not None:
            self._cached.update(built)
        return [built[w] if w in built else self._cached[w] for w in wanted]

    def clear(self) -> None:
        """Forget every cached index: the notes changed."""
        self._cached.clear()

    async def build(self, sql: Session, scope: Scope, public_only: bool) -> ScopeIndex:
        """The index of one scope as `sql` sees the notes now, uncached."""
        return (await self._build_all(sql, [(scope, public_only)]))[scope, public_only]

    async def _build_all(
        self, sql: Session, wanted: Sequence[tuple[Scope, bool]]
    ) -> dict[tuple[Scope, bool], ScopeIndex]:
        """The indexes of several scopes, their notes read in one round trip."""
        if not wanted:
            return {}
        now = self.time(self.clock())
        found = await sql.batch(
            [
                Statement(
                    f"SELECT topic, summary FROM notes WHERE scope = ? {_private(public_only)} "
                    f"AND {LIVE} ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ?",
                    (str(scope), now, _INDEX_CANDIDATES),
                )
                for scope, public_only in wanted
            ]
        )
        built = {}
        for (scope, public_only), result in zip(wanted, found, strict=True):
            ranked = [index_line(r["topic"], r["summary"]) for r in result.rows]
            index = build_index(scope, ranked, **self._caps)
            if len(ranked) == _INDEX_CANDIDATES:  # rare: more notes than an index shows
                total = await sql.row(
                    f"SELECT count(*) AS n FROM notes WHERE scope = ? {_private(public_only)} "
                    f"AND {LIVE}",
                    (str(scope), now),
                )
                assert total is not None
                index = ScopeIndex(scope, index.lines, int(total["n"]) - len(index.lines))
            built[scope, public_only] = index
        return built


def _private(public_only: bool) -> str:
    return "AND NOT private" if public_only else ""
