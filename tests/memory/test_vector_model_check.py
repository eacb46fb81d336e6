"""One embedding model serves the whole store, on each engine: another model or dimension
stops lorebot with the database untouched, the same model again reuses the stored
vectors, a vector of another dimension is never stored, and a query's is not used."""

from __future__ import annotations

import pytest

from memory import Viewer, visibility_for
from memory.errors import EmbeddingMismatch
from memory.stores.conversations import LogEntry
from tests.support import pgvector
from tests.support.vector_stores import (
    ALICE,
    C1,
    DIM,
    EMBED,
    OTHER,
    VectorStores,
    topics,
    vector_database,
    vector_stores,
)

# The fixtures this module uses beyond tests/conftest.py's.
pgvector_server = pgvector.pgvector_server
pgvector_url = pgvector.pgvector_url
vector_database = vector_database
vector_stores = vector_stores


async def fill(vs: VectorStores) -> int:
    """Three notes and two messages with their vectors, and a note queued after them
    (its id returned)."""
    for n in range(3):
        await vs.note(C1, f"note-{n}", f"summary {n}")
    await vs.log.append(
        "slack/C1/t1",
        [LogEntry("user", "hello", "user:slack/UALICE", "Alice"), LogEntry("assistant", "hi")],
        scope=str(C1),
    )
    await vs.vectors.backfill()
    return await vs.note(C1, "queued", "saved after the backfill")


@pytest.mark.parametrize(
    ("model", "dim", "configured"),
    [
        pytest.param(
            EMBED, 12, "embed-test:latest now returns 12 dimensions", id="other-dimension"
        ),
        pytest.param(OTHER, DIM, "other-embed:latest", id="other-model"),
    ],
)
async def test_another_embedding_model_stops_with_the_database_untouched(
    vector_stores: VectorStores, model: str, dim: int, configured: str
) -> None:
    vs = vector_stores
    queued = await fill(vs)
    before = await vs.snapshot()
    assert before["schema_version"] > 0 and before["queue"] == [("note", queued)]
    assert {name: len(rows) for name, rows in before["vectors"].items()} == {
        "vec_notes_1": 3,
        "vec_messages_1": 2,
    }
    vs.fake.embedding_dim = dim
    probes = len(vs.fake.requests_to("/api/embed"))

    with pytest.raises(EmbeddingMismatch) as raised:
        await vs.index(model).prepare()

    message = str(raised.value)
    assert "embed-test:latest (8 dimensions)" in message
    assert configured in message
    assert "lorebot notes reembed" in message and "Nothing was changed" in message
    assert "\n" not in message
    assert await vs.snapshot() == before
    if model == OTHER:  # known to differ by name: the model is not even asked
        assert len(vs.fake.requests_to("/api/embed")) == probes


async def test_the_same_model_again_reuses_the_stored_vectors(vector_stores: VectorStores) -> None:
    vs = vector_stores
    await fill(vs)
    before = await vs.snapshot()

    again = vs.index(f"{EMBED}:latest")
    await again.prepare()

    assert again.enabled and again.state == vs.vectors.state
    assert await again.pending() == 1  # only the note that was queued already
    assert await vs.snapshot() == before


async def test_a_vector_of_another_dimension_is_never_stored(vector_stores: VectorStores) -> None:
    vs = vector_stores
    await vs.note(C1, "short", "a short vector", vector=[1.0, 0.0])

    with pytest.raises(EmbeddingMismatch, match="returned 2 dimensions"):
        await vs.vectors.backfill()

    assert await vs.vectors.pending() == 1
    assert await vs.vector_tables() == {"vec_messages_1": [], "vec_notes_1": []}


async def test_a_query_vector_of_another_dimension_falls_back_to_words(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    await vs.note(C1, "pager", "the pager rotation changes on monday")
    await vs.vectors.backfill()
    vs.fake.embedding_dim = 12  # the model changed under a running lorebot

    hits = await vs.notes.search("pager rotation", visibility_for(Viewer(ALICE, C1)))

    assert topics(hits) == ["pager"]
