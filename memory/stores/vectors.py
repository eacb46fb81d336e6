"""Vectors of notes and messages: the index every engine offers, how many items have a
vector yet, and what a ranking's reader is told when vectors are missing.

One embedding model serves the whole store: a different model stops lorebot with
`EmbeddingMismatch` instead of mixing or dropping vectors. Notes and messages whose vector
is missing or stale wait in a queue, so a save never waits for the embedding model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory.embedder import Embedder
    from memory.policy.visibility import Visibility

NOTE, MESSAGE = "note", "message"
KINDS = (NOTE, MESSAGE)


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


class StoredModel(Protocol):
    """The embedding model the stored vectors come from."""

    @property
    def model(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def describe(self) -> str:
        """The model and its dimension, as `lorebot doctor` shows them."""
        ...


class VectorIndex(Protocol):
    """Nearest-neighbour search over notes and messages, and the queue that feeds it.

    `enabled` is false when no embedding model is configured or the store has not been
    set up for it yet; search is then by words alone and nothing else changes."""

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def state(self) -> StoredModel | None:
        """The model of the stored vectors, once the store is set up for one."""
        ...

    @property
    def enabled(self) -> bool: ...

    async def prepare(self, *, probe: bool = True) -> None:
        """Check the configured model against the stored vectors, and set the store up for
        it on first use. Raises `EmbeddingMismatch` with nothing changed when the model
        differs; `probe=False` leaves the dimension to the first vector made."""
        ...

    async def query_vector(self, text: str) -> list[float] | None:
        """The vector of a query, or None (search by words alone) when there is none."""
        ...

    async def nearest(
        self,
        kind: str,
        vector: Sequence[float],
        visibility: Visibility,
        k: int,
        *,
        on_reader: bool = False,
    ) -> list[tuple[int, float]]:
        """(id, cosine distance) of the k nearest items within `visibility`, nearest first
        (`on_reader`: beside the writer, on committed vectors only)."""
        ...

    async def pending(self) -> int:
        """How many items wait for a vector."""
        ...

    async def coverage(self, kind: str) -> Coverage:
        """How many notes (or searchable messages) have an up-to-date vector, of how many."""
        ...

    async def fetch_gap(self, kind: str) -> Coverage | None:
        """The coverage of `kind` while some of its items wait for a vector, else None;
        cheap enough for every turn."""
        ...

    async def backfill(self, *, batch_size: int = 32, limit: int | None = None) -> int:
        """Embed queued items until the queue is empty (or `limit` were done); returns how
        many. `EmbedderUnavailable` leaves the rest queued."""
        ...

    async def run(self, *, idle_s: float = 2.0) -> None:
        """Keep the vectors up to date until cancelled."""
        ...
