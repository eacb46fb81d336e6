"""Vectors of notes and messages in sqlite-vec, next to the word indexes.

One embedding model serves the whole store: its name and dimension are recorded, and a
different model stops lorebot with `EmbeddingMismatch` instead of mixing or dropping
vectors (`lorebot notes reembed` moves the store to a new model). Notes and messages whose
vector is missing or stale wait in `embed_queue` (filled by triggers), so a save never
waits for, or fails because of, the embedding model.

Vectors are stored as sqlite-vec int8 vectors (each scaled to its largest component;
cosine distance does not mind the scale) in ordinary tables clustered by scope, so a search
reads only the scopes a conversation may read, and computes exact cosine distances with
sqlite-vec. The store checks visibility again in SQL on what comes back. (A `vec0` table
partitioned by scope was measured 3-4x slower on this scope-filtered search, because its
per-chunk overhead dominates when most scopes hold a few dozen vectors.)
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import aiosqlite

from memory.db import Database
from memory.embedder import Embedder, model_name
from memory.errors import EmbedderUnavailable, EmbeddingMismatch, StoreError
from memory.visibility import Visibility

_log = logging.getLogger(__name__)

NOTE, MESSAGE = "note", "message"
KINDS = (NOTE, MESSAGE)
BATCH_SIZE = 32
# How much of a note or message is embedded; small embedding models read ~512 tokens.
EMBED_MAX_CHARS = 2000
QUERY_CACHE_SIZE = 256  # recent query vectors kept (about 1.5 KB each at 384 dimensions)
# Characters of the previous message a message carries, in its vector and word index.
PREVIOUS_CHARS = 400
# How long to wait after a failure when the embedder does not say (its `retry_after`).
RETRY_S = 30.0
# While items wait for their vector, how often a turn's coverage figures are counted again:
# counting is a scan of every note (or message), too slow for every turn of a large store.
COVERAGE_RECOUNT_S = 30.0


@dataclass(frozen=True, slots=True)
class EmbeddingState:
    """The model the stored vectors come from, and the generation of their tables."""

    model: str
    dim: int
    generation: int

    def table(self, kind: str) -> str:
        return f"vec_{kind}s_{self.generation}"

    def describe(self) -> str:
        return f"{self.model} ({self.dim} dimensions)"


@dataclass(frozen=True, slots=True)
class Coverage:
    """Items of one kind with an up-to-date vector, of all that should have one."""

    embedded: int
    total: int

    @property
    def partial(self) -> bool:
        return self.embedded < self.total


def words_alone_notice(model: str) -> str:
    """What a ranking's reader should know when the embedding model gave the query no
    vector, so everything was ranked by its words."""
    return f"ranked by words alone: the embedding model {model} did not answer"


def coverage_notice(kind: str, coverage: Coverage) -> str | None:
    """What a ranking's reader should know when only some items have a vector yet."""
    if not coverage.partial:
        return None
    items = "notes" if kind == NOTE else "messages"
    return (
        f"vectors for {coverage.embedded:,} of {coverage.total:,} {items}; the rest are "
        "ranked by their words alone until lorebot has embedded them"
    )


def _counted(kind: str) -> tuple[str, str]:
    """The table of `kind` and the condition of its items that get a vector."""
    return ("notes", "1") if kind == NOTE else ("messages", "scope != ''")


def note_text(topic: str, summary: str, body: str) -> str:
    return f"{topic.replace('-', ' ')}: {summary}\n{body}".strip()[:EMBED_MAX_CHARS]


def message_text(content: str, before: str | None = None) -> str:
    """A message is embedded after the one before it, so a short reply ("yep, 8443")
    carries what it answers (+5 points of hit@10 in benchmarks/recall_quality.py)."""
    text = f"{before[:PREVIOUS_CHARS]}\n{content}" if before else content
    return text.strip()[:EMBED_MAX_CHARS]


def serialize(vector: Sequence[float]) -> bytes:
    """A vector as sqlite-vec int8: scaled so its largest component is ±127."""
    top = max((abs(x) for x in vector), default=0.0) or 1.0
    return struct.pack(f"{len(vector)}b", *(round(x / top * 127) for x in vector))


async def read_state(conn: aiosqlite.Connection, prefix: str = "") -> EmbeddingState | None:
    """The recorded state (`prefix="next_"`: the target of a re-embedding in progress)."""
    async with conn.execute("SELECT key, value FROM embedding_state") as cursor:
        values = {k: v for k, v in await cursor.fetchall()}
    if f"{prefix}model" not in values:
        return None
    return EmbeddingState(
        values[f"{prefix}model"], int(values[f"{prefix}dim"]), int(values[f"{prefix}generation"])
    )


async def write_state(conn: aiosqlite.Connection, state: EmbeddingState, prefix: str = "") -> None:
    await conn.executemany(
        "INSERT INTO embedding_state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [
            (f"{prefix}model", state.model),
            (f"{prefix}dim", str(state.dim)),
            (f"{prefix}generation", str(state.generation)),
        ],
    )


async def create_tables(conn: aiosqlite.Connection, state: EmbeddingState) -> None:
    for kind in KINDS:
        table = state.table(kind)
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (scope TEXT NOT NULL, id INTEGER NOT NULL, "
            "private INTEGER NOT NULL, embedding BLOB NOT NULL, PRIMARY KEY (scope, id)) "
            "WITHOUT ROWID"
        )
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_by_id ON {table} (id)")


async def drop_tables(conn: aiosqlite.Connection, state: EmbeddingState) -> None:
    for kind in KINDS:
        await conn.execute(f"DROP TABLE IF EXISTS {state.table(kind)}")


async def texts_of(
    conn: aiosqlite.Connection, kind: str, ids: Sequence[int]
) -> dict[int, tuple[str, int, str]]:
    """(scope, private, text to embed) of the items that still exist, by id."""
    marks = ", ".join("?" for _ in ids)
    if kind == NOTE:
        sql = f"SELECT id, scope, private, topic, summary, body FROM notes WHERE id IN ({marks})"
        async with conn.execute(sql, tuple(ids)) as cursor:
            return {
                r[0]: (r[1], r[2], note_text(r[3], r[4], r[5])) for r in await cursor.fetchall()
            }
    sql = (
        "SELECT m.id, m.scope, m.content, (SELECT p.content FROM messages AS p WHERE "
        "p.conversation = m.conversation AND p.id < m.id ORDER BY p.id DESC LIMIT 1) "
        f"FROM messages AS m WHERE m.id IN ({marks}) AND m.scope != ''"
    )
    async with conn.execute(sql, tuple(ids)) as cursor:
        return {r[0]: (r[1], 1, message_text(r[2], r[3])) for r in await cursor.fetchall()}


async def store_vectors(
    conn: aiosqlite.Connection,
    state: EmbeddingState,
    kind: str,
    ids: Sequence[int],
    items: dict[int, tuple[str, int, str]],
    vectors: dict[int, list[float]],
) -> None:
    """Replace the vectors of `ids` (deleting those of items that are gone)."""
    table = state.table(kind)
    await conn.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])
    for vector in vectors.values():
        if len(vector) != state.dim:
            raise EmbeddingMismatch(
                f"the embedding model returned {len(vector)} dimensions, but the store holds "
                f"vectors of {state.describe()}: run `lorebot notes reembed`"
            )
    await conn.executemany(
        f"INSERT INTO {table} (scope, id, private, embedding) VALUES (?, ?, ?, ?)",
        [(items[i][0], i, items[i][1], serialize(v)) for i, v in vectors.items()],
    )


def retry_after(exc: StoreError) -> float:
    """Seconds to wait before asking the embedder again after `exc`."""
    delay = exc.retry_after if isinstance(exc, EmbedderUnavailable) else None
    return RETRY_S if delay is None else delay


async def embed_items(
    embedder: Embedder, items: dict[int, tuple[str, int, str]]
) -> dict[int, list[float]]:
    ids = list(items)
    vectors = await embedder.embed([items[i][2] for i in ids])
    return dict(zip(ids, vectors, strict=True))


class VectorIndex:
    """Nearest-neighbour search over notes and messages, and the queue that feeds it.

    `enabled` is false when no embedding model is configured or the store has not been
    set up for it yet; search is then by words alone and nothing else changes."""

    def __init__(self, db: Database, embedder: Embedder | None) -> None:
        self.db = db
        self.embedder = embedder
        self.state: EmbeddingState | None = None
        self._query_backoff_until = 0.0
        # Recent queries' vectors: a repeated question costs no embedding call.
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._dimension_checked = False  # by a probe, or by the first vector it made
        self._counts: dict[str, tuple[float, Coverage]] = {}  # kind: (recount at, coverage)

    @property
    def enabled(self) -> bool:
        return self.embedder is not None and self.state is not None

    async def prepare(self, *, probe: bool = True) -> None:
        """Check the configured model against the stored vectors, and set the store up for
        it on first use (every note and message is queued). Raises `EmbeddingMismatch`
        with the database untouched when the model differs. `probe=False` trusts the
        stored dimension until the first vector (a one-shot search's query) checks it,
        which saves a command an embedding call."""
        try:
            await self._prepare(probe)
        except EmbeddingMismatch:
            raise
        except StoreError as exc:  # unreachable, or the model is not pulled yet
            if self.state is None:
                _log.warning("vectors wait until the embedding model answers: %s", exc)
            else:
                _log.warning("embedding model unreachable, new notes are queued: %s", exc)

    async def _prepare(self, probe_dimension: bool = True) -> None:
        """`prepare`, raising the embedder's error when it does not answer (the stored
        state is taken up first, so new notes are queued meanwhile)."""
        stored = await read_state(self.db.conn)
        if self.embedder is None:
            if stored is not None:
                _log.info("vectors of %s are unused: no embedding model is set", stored.model)
            return
        wanted = model_name(self.embedder.model)
        if stored is not None and stored.model != wanted:
            raise EmbeddingMismatch(_mismatch(stored, wanted))
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
                raise EmbeddingMismatch(_mismatch(stored, wanted, dim))
            self.state = stored
            return
        self.state = await self._set_up(EmbeddingState(wanted, dim, 1))
        _log.info("vectors set up for %s; existing notes are queued", self.state.describe())

    async def _set_up(self, state: EmbeddingState) -> EmbeddingState:
        async with self.db.transaction() as conn:
            await create_tables(conn, state)
            await write_state(conn, state)
            await conn.execute("INSERT OR IGNORE INTO embed_queue SELECT 'note', id FROM notes")
            await conn.execute(
                "INSERT OR IGNORE INTO embed_queue SELECT 'message', id FROM messages "
                "WHERE scope != ''"
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
            problem = _mismatch(self.state, model_name(self.embedder.model), len(vector))
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
        """(id, cosine distance) of the k nearest items within `visibility`, nearest first.
        Messages are read only in the conversation's own scopes (`visibility.full`).
        `on_reader` runs the query on the database's read-only connection, beside the
        writer; it sees only committed vectors."""
        if self.state is None or k <= 0:
            return []
        full = [str(s) for s in visibility.full]
        public = [str(s) for s in visibility.public_only] if kind == NOTE else []
        clauses = []
        if full:
            clauses.append(f"scope IN ({', '.join('?' for _ in full)})")
        if public:
            clauses.append(f"(scope IN ({', '.join('?' for _ in public)}) AND private = 0)")
        if not clauses:
            return []
        conn = self.db.reader if on_reader else self.db.conn
        async with conn.execute(
            "SELECT id, vec_distance_cosine(vec_int8(embedding), vec_int8(?)) AS distance "
            f"FROM {self.state.table(kind)} WHERE {' OR '.join(clauses)} "
            "ORDER BY distance LIMIT ?",
            (serialize(vector), *full, *public, k),
        ) as cursor:
            return [(int(r[0]), float(r[1])) for r in await cursor.fetchall()]

    async def pending(self) -> int:
        return int(await self.db.scalar("SELECT count(*) FROM embed_queue"))

    async def coverage(self, kind: str) -> Coverage:
        """How many notes (or searchable messages) have an up-to-date vector, of how many:
        the others wait in the queue (or all do, before the model first answered)."""
        table, where = _counted(kind)
        total = int(await self.db.scalar(f"SELECT count(*) FROM {table} WHERE {where}"))
        if self.state is None:
            return Coverage(0, total)
        waiting = await self.db.scalar(
            f"SELECT count(*) FROM embed_queue AS q JOIN {table} AS t ON t.id = q.item_id "
            f"WHERE q.kind = ? AND {where}",
            (kind,),
        )
        return Coverage(total - int(waiting), total)

    async def fetch_gap(self, kind: str) -> Coverage | None:
        """The coverage of `kind` while some of its items wait for a vector, else None;
        cheap enough for every turn. Whether one waits is asked each time (the lookup stops
        at the first); the counts are redone at most every `COVERAGE_RECOUNT_S` while items
        wait, so their figures may be that old."""
        if self.state is None:
            return None
        table, where = _counted(kind)
        waiting = await self.db.scalar(
            f"SELECT EXISTS (SELECT 1 FROM embed_queue AS q JOIN {table} AS t "
            f"ON t.id = q.item_id WHERE q.kind = ? AND {where})",
            (kind,),
        )
        if not waiting:
            self._counts.pop(kind, None)
            return None
        now = time.monotonic()
        counted = self._counts.get(kind)
        if counted is None or now >= counted[0]:
            counted = (now + COVERAGE_RECOUNT_S, await self.coverage(kind))
            self._counts[kind] = counted
        return counted[1]

    async def backfill(self, *, batch_size: int = BATCH_SIZE, limit: int | None = None) -> int:
        """Embed queued items until the queue is empty (or `limit` were done); returns how
        many. `EmbedderUnavailable` leaves the rest queued."""
        if self.embedder is None or self.state is None:
            return 0
        done = 0
        while limit is None or done < limit:
            async with self.db.conn.execute(
                "SELECT kind, item_id FROM embed_queue ORDER BY kind DESC, item_id LIMIT ?",
                (batch_size,),
            ) as cursor:
                queued = [(r[0], int(r[1])) for r in await cursor.fetchall()]
            if not queued:
                break
            for kind in KINDS:
                ids = [item_id for k, item_id in queued if k == kind]
                if ids:
                    done += await self._embed_batch(kind, ids)
        return done

    async def _embed_batch(self, kind: str, ids: list[int]) -> int:
        assert self.embedder is not None and self.state is not None
        items = await texts_of(self.db.conn, kind, ids)
        vectors = await embed_items(self.embedder, items) if items else {}
        self._query_backoff_until = 0.0  # the model answers again
        async with self.db.transaction() as conn:
            # An item changed while it was embedded is queued again by its trigger only if
            # it was dequeued already; re-read the texts to keep only up-to-date vectors.
            current = await texts_of(conn, kind, ids)
            fresh = {i: v for i, v in vectors.items() if current.get(i) == items[i]}
            await store_vectors(conn, self.state, kind, ids, current, fresh)
            stale = [i for i in ids if i in current and i not in fresh]
            pending = await read_state(conn, "next_")
            if pending is not None:  # an unfinished re-embedding redoes what changed since
                table = pending.table(kind)
                await conn.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])
            await conn.executemany(
                "DELETE FROM embed_queue WHERE kind = ? AND item_id = ?",
                [(kind, i) for i in ids if i not in stale],
            )
        return len(ids)

    async def run(self, *, idle_s: float = 2.0) -> None:
        """Keep the vectors up to date until cancelled, waiting out an unreachable model
        for as long as the embedder says."""
        if self.embedder is None:
            return
        while True:
            try:
                if self.state is None:
                    await self._prepare()
                await self.backfill()
                await self.db.wait_for_commit(idle_s)
                continue
            except EmbeddingMismatch as exc:
                _log.error("embedding stopped: %s", exc)
                return
            except StoreError as exc:  # unreachable, or the model is not pulled yet
                delay = retry_after(exc)
                _log.warning("embedding paused for %.0f s: %s", delay, exc)
            await asyncio.sleep(delay)


def _mismatch(stored: EmbeddingState, model: str, dim: int | None = None) -> str:
    if model == stored.model:  # the same name answers with another dimension
        return (
            f"the stored vectors were made by {stored.describe()}, but {model} now returns "
            f"{dim} dimensions (was it replaced in Ollama?). Nothing was changed. Run "
            "`lorebot notes reembed` to re-embed every note and message with it (it can be "
            "interrupted and resumed)"
        )
    configured = model if dim is None else f"{model} ({dim} dimensions)"
    return (
        f"the stored vectors were made by {stored.describe()}, but ollama.embed_model is "
        f"{configured}. Nothing was changed. Either set ollama.embed_model back to "
        f"{stored.model}, or run `lorebot notes reembed` to re-embed every note and message "
        "with the new model (it can be interrupted and resumed)"
    )
