"""The index of each scope (its best notes, one line each, within the caps), built from
the notes, and cached until they change where the engine can tell when another connection
wrote (`NoteEngine.data_version`); elsewhere read fresh."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from memory.clock import Clock
from memory.policy.visibility import Visibility
from memory.sql.note_engine import NoteEngine
from memory.sql.note_rows import LIVE
from memory.sql.session import Result, Session, Statement
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
        self._cleared = 0  # how often the cache was cleared: a build spanning one is not kept

    async def get(self, sql: Session, wanted: Sequence[tuple[Scope, bool]]) -> list[ScopeIndex]:
        """The index of each (scope, only its public notes) wanted."""
        statements = self.statements(wanted)
        return await self.finish(sql, wanted, await sql.batch(statements) if statements else [])

    def statements(self, wanted: Sequence[tuple[Scope, bool]]) -> list[Statement]:
        """What `get` first reads, to be sent along with other reads: the engine's data
        version where it caches indexes, else the notes of every index wanted."""
        version = self.engine.data_version
        return [version] if version is not None else self._notes_of(list(dict.fromkeys(wanted)))

    async def finish(
        self, sql: Session, wanted: Sequence[tuple[Scope, bool]], results: Sequence[Result]
    ) -> list[ScopeIndex]:
        """The indexes wanted, from what `statements` read; on a cache miss the indexes
        missing are read with `sql`."""
        unique = list(dict.fromkeys(wanted))
        if self.engine.data_version is None:
            built = await self._built(sql, unique, results)
            return [built[w] for w in wanted]
        [version] = results
        if not version.rows or version.rows[0]["data_version"] != self._data_version:
            self.clear()
            self._data_version = version.rows[0]["data_version"] if version.rows else None
        found = {w: self._cached[w] for w in unique if w in self._cached}
        if missing := [w for w in unique if w not in found]:
            cleared = self._cleared
            built = await self._built(sql, missing, await sql.batch(self._notes_of(missing)))
            if cleared == self._cleared:  # else a write came meanwhile: built from before it
                self._cached.update(built)
            found |= built
        return [found[w] for w in wanted]

    def clear(self) -> None:
        """Forget every cached index: the notes changed."""
        self._cached.clear()
        self._cleared += 1

    async def build(self, sql: Session, scope: Scope, public_only: bool) -> ScopeIndex:
        """The index of one scope as `sql` sees the notes now, uncached."""
        wanted = [(scope, public_only)]
        built = await self._built(sql, wanted, await sql.batch(self._notes_of(wanted)))
        return built[scope, public_only]

    def _notes_of(self, wanted: Sequence[tuple[Scope, bool]]) -> list[Statement]:
        """The notes each index is built from, one statement per index."""
        now = self.time(self.clock())
        return [
            Statement(
                f"SELECT topic, summary FROM notes WHERE scope = ? {_private(public_only)} "
                f"AND {LIVE} ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ?",
                (str(scope), now, _INDEX_CANDIDATES),
            )
            for scope, public_only in wanted
        ]

    async def _built(
        self, sql: Session, wanted: Sequence[tuple[Scope, bool]], found: Sequence[Result]
    ) -> dict[tuple[Scope, bool], ScopeIndex]:
        """The indexes of `wanted`, from the notes `_notes_of` read for them."""
        built = {}
        for (scope, public_only), result in zip(wanted, found, strict=True):
            ranked = [index_line(r["topic"], r["summary"]) for r in result.rows]
            index = build_index(scope, ranked, **self._caps)
            if len(ranked) == _INDEX_CANDIDATES:  # rare: more notes than an index shows
                total = await sql.row(
                    f"SELECT count(*) AS n FROM notes WHERE scope = ? {_private(public_only)} "
                    f"AND {LIVE}",
                    (str(scope), self.time(self.clock())),
                )
                assert total is not None
                index = ScopeIndex(scope, index.lines, int(total["n"]) - len(index.lines))
            built[scope, public_only] = index
        return built


def wanted_by(visibility: Visibility) -> list[tuple[Scope, bool]]:
    """The indexes `visibility` sees: (scope, only its public notes)."""
    return [(s, False) for s in visibility.full] + [(s, True) for s in visibility.public_only]


def _private(public_only: bool) -> str:
    return "AND NOT private" if public_only else ""
