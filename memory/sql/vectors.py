"""Vectors of notes and messages, next to the word indexes, on every engine.

One embedding model serves the whole store: its name and dimension are recorded, and a
different model stops lorebot with `EmbeddingMismatch` instead of mixing or dropping
vectors (`lorebot notes reembed` moves the store to a new model). Notes and messages whose
vector is missing or stale wait in `embed_queue` (filled by triggers), so a save never
waits for, or fails because of, the embedding model.

A search reads only the tables of the scopes a conversation may read and computes exact
cosine distances; the engine's `VectorTables` (`memory.sql.vector_tables`) holds the
tables and that SQL: sqlite-vec on SQLite, pgvector on PostgreSQL. Where an engine cannot
hold vectors (a PostgreSQL server without pgvector, or a role that may not enable it),
recall is by words alone: `enabled` stays false and `unavailable` says why, once in the
log and in `lorebot doctor`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence

from memory.embedder import Embedder
from memory.embeddings import (
    BATCH_SIZE,
    COVERAGE_RECOUNT_S,
    EMBED_MAX_CHARS,
    QUERY_CACHE_SIZE,
    EmbeddingState,
    mismatch,
    retry_after,
)
from memory.errors import EmbeddingMismatch, StoreError
from memory.policy.visibility import Visibility
from memory.sql.session import Session, SqlDatabase, marks
from memory.sql.vector_tables import (
    VectorTables,
    embed_items,
    read_state,
    store_vectors,
    texts_of,
    write_state,
)
from memory.stores.vectors import KINDS, NOTE, Coverage

_log = logging.getLogger(__name__)


def _counted(kind: str) -> tuple[str, str]:
    """The table of `kind` and the condition of its items that get a vector."""
    return ("notes", "true") if kind == NOTE else ("messages", "scope != ''")


class SqlVectorIndex:
    """Nearest-neighbour search over notes and messages, and the queue that feeds it.

    `enabled` is false when no embedding model is configured, the store has not been set
    up for it yet, or the engine cannot hold vectors (`unavailable` says so); search is
    then by words alone and nothing else changes."""

    def __init__(self, db: SqlDatabase, embedder: Embedder | None, tables: VectorTables) -> None:
        self.db = db
        self.embedder = embedder
        self.tables = tables
        self.state: EmbeddingState | None = None
        # Why vectors are off in this database, for `lorebot doctor`; None while they may work.
        self.unavailable: str | None = None
        self._query_backoff_until = 0.0
        # Recent queries' vectors: a repeated question costs no embedding call.
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._dimension_checked = False  # by a probe, or by the first vector it made
        self._counts: dict[str, tuple[float, Coverage]] = {}  # kind: (recount at, coverage)

    @property
    def enabled(self) -> bool:
        return self.embedder is not None and self.state is not None

    async def prepare(self, *, probe: bool = True) -> None:
        """Make vectors usable in the database where they are not yet (PostgreSQL enables
        pgvector), check the configured model against the stored vectors, and set the
        store up for it on first use (every note and message is queued). Raises
        `EmbeddingMismatch` with the database untouched when the model differs, and
        `StoreUnavailable` when PostgreSQL cannot be reached. `probe=False` trusts the
        stored dimension until the first vector (a one-shot search's query) checks it,
        which saves a command an embedding call."""
        stopping: tuple[type[StoreError], ...] = (EmbeddingMismatch, *self.tables.unreachable)
        try:
            await self._prepare(probe)
        except stopping:
            raise
        except StoreError as exc:  # unreachable, or the model is not pulled yet
            if self.state is None:
                _log.warning("vectors wait until the embedding model answers: %s", exc)
            else:
                _log.warning("embedding model unreachable, new notes are queued: %s", exc)

    async def _prepare(self, probe_dimension: bool = True) -> None:
        """`prepare`, raising the embedder's error when it does not answer (the stored
        state is taken up first, so new notes are queued meanwhile)."""
        async with self.db.reading() as sql:
            stored = await read_state(sql)
        if self.embedder is None:
            if stored is not None:
                _log.info("vectors of %s are unused: no embedding model is set", stored.model)
            return
        if not await self._usable():
            return
        wanted = self.embedder.model
        if stored is not None and stored.model != wanted:
            raise EmbeddingMismatch(mismatch(stored, wanted))
        if stored is not None and not probe_dimension:
            self.state = stored
            return
        try:
            probe = await self.embedder.embed(["lorebot dimension probe"])
        except StoreError:
            self.state = stored
            raise
        dim = len(probe[0])
        self._dimension_checked = True
        if stored is not None:
            if stored.dim != dim:
                raise EmbeddingMismatch(mismatch(stored, wanted, dim))
            self.state = stored
            return
        self.state = await self._set_up(EmbeddingState(wanted, dim, 1))
        _log.info("vectors set up for %s; existing notes are queued", self.state.describe())

    async def _usable(self) -> bool:
        """Whether the database can hold vectors, made so on first use; the reason it
        cannot is logged once and kept in `unavailable` (a restart looks again)."""
        if self.unavailable is not None:
            return False
        self.unavailable = await self.tables.enable()
        if self.unavailable is not None:
            _log.warning("%s", self.unavailable)
        return self.unavailable is None

    async def _set_up(self, state: EmbeddingState) -> EmbeddingState:
        async with self.db.transaction() as sql:
            if await self.tables.lock(sql):
                stored = await read_state(sql)  # a replica may have set up first
                if stored is not None:
                    if (stored.model, stored.dim) != (state.model, state.dim):
                        raise EmbeddingMismatch(mismatch(stored, state.model, state.dim))
                    return stored
            await self.tables.create(sql, state)
            await write_state(sql, state)
            # (`WHERE true`: SQLite reads an upsert's SELECT without a WHERE as a join.)
            await sql.run(
                "INSERT INTO embed_queue (kind, item_id) SELECT 'note', id FROM notes "
                "WHERE true ON CONFLICT DO NOTHING"
            )
            await sql.run(
                "INSERT INTO embed_queue (kind, item_id) SELECT 'message', id FROM messages "
                "WHERE scope != '' ON CONFLICT DO NOTHING"
            )
        return state

    async def query_vector(self, text: str) -> list[float] | None:
        """The vector of a query, or None (search by words alone) when there is none."""
        if self.embedder is None or self.state is None or not text.strip():
            return None
        text = text[:EMBED_MAX_CHARS]
        if (cached := self._queries.get(text)) is not None:
            self._queries.move_to_end(text)
            return cached
        if time.monotonic() < self._query_backoff_until:
            return None  # the model failed a moment ago: don't make every turn wait on it
        try:
            [vector] = await self.embedder.embed([text])
        except StoreError as exc:  # unreachable, or the model is gone
            delay = retry_after(exc)
            _log.warning("searching by words alone for %.0f s: %s", delay, exc)
            self._query_backoff_until = time.monotonic() + delay
            return None
        if len(vector) != self.state.dim:
            problem = mismatch(self.state, self.embedder.model, len(vector))
            if not self._dimension_checked:
                raise EmbeddingMismatch(problem)  # the stored dimension was taken on trust
            _log.error(problem)
            return None
        self._dimension_checked = True
        self._queries[text] = vector
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return vector

    async def nearest(
        self,
        kind: str,
        vector: Sequence[float],
        visibility: Visibility,
        k: int,
        *,
        on_reader: bool = False,
    ) -> list[tuple[int, float]]:
        """(id, cosine distance) of the k nearest items within `visibility`, nearest first,
        computed exactly. Messages are read only in the conversation's own scopes
        (`visibility.full`); notes of `visibility.public_only` scopes only when public.
        `on_reader` runs the query beside the writer where the engine can (SQLite's
        read-only connection); it sees only committed vectors."""
        if self.state is None or k <= 0:
            return []
        full = [str(s) for s in visibility.full]
        # (Messages are stored as private too, so no public-only scope reaches them.)
        public = [str(s) for s in visibility.public_only] if kind == NOTE else []
        if not full and not public:
            return []
        table = self.state.table(kind)
        return await self.tables.nearest(table, vector, full, public, k, on_reader=on_reader)

    async def pending(self) -> int:
        async with self.db.reading() as sql:
            row = await sql.row("SELECT count(*) AS n FROM embed_queue")
        assert row is not None
        return int(row["n"])

    async def coverage(self, kind: str) -> Coverage:
        """How many notes (or searchable messages) have an up-to-date vector, of how many:
        the others wait in the queue (or all do, before the model first answered)."""
        async with self.db.reading() as sql:
            return await self._coverage(sql, kind)

    async def _coverage(self, sql: Session, kind: str) -> Coverage:
        table, where = _counted(kind)
        total = await sql.row(f"SELECT count(*) AS n FROM {table} WHERE {where}")
        assert total is not None
        if self.state is None:
            return Coverage(0, int(total["n"]))
        waiting = await sql.row(
            f"SELECT count(*) AS n FROM embed_queue AS q JOIN {table} AS t "
            f"ON t.id = q.item_id WHERE q.kind = ? AND {where}",
            (kind,),
        )
        assert waiting is not None
        return Coverage(int(total["n"]) - int(waiting["n"]), int(total["n"]))

    async def fetch_gap(self, kind: str) -> Coverage | None:
        """The coverage of `kind` while some of its items wait for a vector, else None;
        cheap enough for every turn. Whether one waits is asked each time (the lookup stops
        at the first); the counts are redone at most every `COVERAGE_RECOUNT_S` while items
        wait, so their figures may be that old."""
        if self.state is None:
            return None
        table, where = _counted(kind)
        async with self.db.reading() as sql:
            found = await sql.row(
                f"SELECT EXISTS (SELECT 1 FROM embed_queue AS q JOIN {table} AS t "
                f"ON t.id = q.item_id WHERE q.kind = ? AND {where}) AS waiting",
                (kind,),
            )
            if found is None or not found["waiting"]:
                self._counts.pop(kind, None)
                return None
            now = time.monotonic()
            counted = self._counts.get(kind)
            if counted is None or now >= counted[0]:
                counted = (now + COVERAGE_RECOUNT_S, await self._coverage(sql, kind))
                self._counts[kind] = counted
        return counted[1]

    async def backfill(self, *, batch_size: int = BATCH_SIZE, limit: int | None = None) -> int:
        """Embed queued items until the queue is empty (or `limit` were done); returns how
        many. `EmbedderUnavailable` leaves the rest queued."""
        if self.embedder is None or self.state is None:
            return 0
        done = 0
        while limit is None or done < limit:
            async with self.db.reading() as sql:
                queued = await sql.rows(
                    "SELECT kind, item_id FROM embed_queue ORDER BY kind DESC, item_id LIMIT ?",
                    (batch_size,),
                )
            if not queued:
                break
            for kind in KINDS:
                ids = [int(r["item_id"]) for r in queued if r["kind"] == kind]
                if ids:
                    done += await self._embed_batch(kind, ids)
        return done

    async def _embed_batch(self, kind: str, ids: list[int]) -> int:
        assert self.embedder is not None and self.state is not None
        async with self.db.reading() as sql:
            items = await texts_of(sql, kind, ids)
        vectors = await embed_items(self.embedder, items) if items else {}
        self._query_backoff_until = 0.0  # the model answers again
        async with self.db.transaction() as sql:
            # An item changed while it was embedded stays queued: its text is read again
            # (its row kept from change until the commit where another process could change
            # it meanwhile), and only up-to-date vectors are kept.
            current = await texts_of(sql, kind, ids, lock=True)
            fresh = {i: v for i, v in vectors.items() if current.get(i) == items[i]}
            await store_vectors(sql, self.tables, self.state, kind, ids, current, fresh)
            await self.tables.forget_unfinished(sql, kind, ids)
            done = [i for i in ids if i not in current or i in fresh]
            if done:
                await sql.run(
                    f"DELETE FROM embed_queue WHERE kind = ? AND item_id IN ({marks(len(done))})",
                    (kind, *done),
                )
        return len(ids)

    async def run(self, *, idle_s: float = 2.0) -> None:
        """Keep the vectors up to date until cancelled, looking at the queue at least every
        `idle_s` and waiting out an unreachable model for as long as the embedder says.
        Returns at once where the database cannot hold vectors."""
        if self.embedder is None:
            return
        while True:
            try:
                if self.state is None:
                    await self._prepare()
                    if self.unavailable is not None:
                        return
                await self.backfill()
                await self.tables.wait_for_changes(idle_s)
                continue
            except EmbeddingMismatch as exc:
                _log.error("embedding stopped: %s", exc)
                return
            except StoreError as exc:  # unreachable, or the model is not pulled yet
                delay = retry_after(exc)
                _log.warning("embedding paused for %.0f s: %s", delay, exc)
            await asyncio.sleep(delay)
