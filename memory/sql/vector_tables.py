"""The vector tables as the engine-neutral vector index and re-embedding see them: what an
engine does its own way (`VectorTables`: the tables' layout, the storing of vectors and the
nearest-neighbour search), and what is the same on every engine: the recorded model
(`embedding_state`), the text each note or message gives (`memory.embeddings`), and a batch
of vectors replacing the old ones.

Each engine keeps one pair of tables (notes, messages) per generation, so a re-embedding
fills new tables beside the ones in use. `embedding_state` records the model, the dimension
and the generation of the tables in use, and, during a re-embedding, those of its target
under the prefix `next_`. Each row keeps its item's scope and privacy beside its vector, so
a search filters by scope in the same table it ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory.embedder import Embedder
from memory.embeddings import EmbeddingState, batch_mismatch, message_text, note_text
from memory.errors import EmbeddingMismatch, StoreError
from memory.sql.session import Session, marks
from memory.stores.vectors import NOTE

Items = dict[int, tuple[str, bool, str]]  # id: (scope, private, text to embed)
VectorRow = tuple[int, str, bool, Sequence[float]]  # id, scope, private, vector


class VectorTables(Protocol):
    """What an engine does its own way for the vector index: its vector tables and the
    SQL over them, and how it learns that new items may wait."""

    # What says the database cannot be reached, which `prepare` raises rather than logs:
    # PostgreSQL's `StoreUnavailable`. SQLite's (a file locked by another process past the
    # busy timeout) only delays the set-up, as a model that does not answer does.
    unreachable: tuple[type[StoreError], ...]

    async def enable(self) -> str | None:
        """Make vectors usable in this database (PostgreSQL: pgvector's extension); None
        when they are, else why not, for the operator."""
        ...

    async def lock(self, sql: Session) -> bool:
        """Hold the lock on setting the vectors up until `sql`'s transaction ends; True
        where another process may have set them up since their state was read (replicas
        on PostgreSQL), which is then read again."""
        ...

    async def create(self, sql: Session, state: EmbeddingState) -> None:
        """Create the tables of `state` unless they exist."""
        ...

    async def insert(self, sql: Session, table: str, rows: Sequence[VectorRow]) -> None:
        """Add these rows to `table` (whose rows of the same ids were just deleted)."""
        ...

    async def forget_unfinished(self, sql: Session, kind: str, ids: Sequence[int]) -> None:
        """Drop the vectors an unfinished re-embedding made of `ids`, whose items changed
        since, so that it makes them again (SQLite's `lorebot notes reembed`)."""
        ...

    async def nearest(
        self,
        table: str,
        vector: Sequence[float],
        full: Sequence[str],
        public: Sequence[str],
        k: int,
        *,
        on_reader: bool,
    ) -> list[tuple[int, float]]:
        """(id, cosine distance) of the k rows of `table` nearest `vector`, nearest first,
        of the scopes `full` and the public rows of the scopes `public` (one is not empty).
        `on_reader`: beside the writer, on committed vectors only."""
        ...

    async def wait_for_changes(self, idle_s: float) -> None:
        """Return once items may have been queued, or after `idle_s`."""
        ...


async def read_state(sql: Session, prefix: str = "") -> EmbeddingState | None:
    """The recorded state (`prefix="next_"`: the target of a re-embedding in progress)."""
    rows = await sql.rows("SELECT key, value FROM embedding_state")
    values = {row["key"]: row["value"] for row in rows}
    if f"{prefix}model" not in values:
        return None
    return EmbeddingState(
        values[f"{prefix}model"], int(values[f"{prefix}dim"]), int(values[f"{prefix}generation"])
    )


async def write_state(sql: Session, state: EmbeddingState, prefix: str = "") -> None:
    await sql.run_many(
        "INSERT INTO embedding_state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [
            (f"{prefix}model", state.model),
            (f"{prefix}dim", str(state.dim)),
            (f"{prefix}generation", str(state.generation)),
        ],
    )


async def texts_of(sql: Session, kind: str, ids: Sequence[int], *, lock: bool = False) -> Items:
    """(scope, private, text to embed) of the items that still exist, by id. `lock` keeps
    their rows from change until the transaction ends where another process could change
    them meanwhile (PostgreSQL), so a change waits for it and then queues the item again
    (its trigger's insert would otherwise find it still queued)."""
    if not ids:
        return {}
    if kind == NOTE:
        share = sql.dialect.share_rows("notes") if lock else ""
        rows = await sql.rows(
            "SELECT id, scope, private, topic, summary, body FROM notes "
            f"WHERE id IN ({marks(len(ids))}) {share}",
            tuple(ids),
        )
        return {
            int(r["id"]): (
                r["scope"],
                bool(r["private"]),
                note_text(r["topic"], r["summary"], r["body"]),
            )
            for r in rows
        }
    share = sql.dialect.share_rows("m") if lock else ""
    rows = await sql.rows(
        "SELECT m.id, m.scope, m.content, (SELECT p.content FROM messages AS p WHERE "
        "p.conversation = m.conversation AND p.id < m.id ORDER BY p.id DESC LIMIT 1) AS previous "
        f"FROM messages AS m WHERE m.id IN ({marks(len(ids))}) AND m.scope != '' {share}",
        tuple(ids),
    )
    return {
        int(r["id"]): (r["scope"], True, message_text(r["content"], r["previous"])) for r in rows
    }


async def embed_items(embedder: Embedder, items: Items) -> dict[int, list[float]]:
    ids = list(items)
    vectors = await embedder.embed([items[i][2] for i in ids])
    return dict(zip(ids, vectors, strict=True))


async def store_vectors(
    sql: Session,
    tables: VectorTables,
    state: EmbeddingState,
    kind: str,
    ids: Sequence[int],
    items: Items,
    vectors: dict[int, list[float]],
) -> None:
    """Replace the vectors of `ids` in the tables of `state` (deleting those of items that
    are gone); `EmbeddingMismatch`, with nothing stored, for a vector of another dimension."""
    for vector in vectors.values():
        if len(vector) != state.dim:
            raise EmbeddingMismatch(batch_mismatch(state, len(vector)))
    if not ids:
        return
    table = state.table(kind)
    await sql.run(f"DELETE FROM {table} WHERE id IN ({marks(len(ids))})", tuple(ids))
    if vectors:
        await tables.insert(
            sql, table, [(i, items[i][0], items[i][1], v) for i, v in vectors.items()]
        )
