"""Re-embeddings that were interrupted (`lorebot notes reembed`, SQLite's): one for another
model is dropped, and notes changed or forgotten while one waited get what they should.
The command's kill-and-resume is in tests/bot/cli/test_reembed_cli.py."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from memory import Scope, Viewer, explicit, visibility_for
from memory.embeddings import EmbeddingState
from memory.sqlite.reembed import reembed
from memory.stores.vectors import NOTE
from tests.support.vector_stores import (
    ALICE,
    C1,
    DIM,
    OTHER,
    VectorStores,
    unit,
    vector_database,
    vector_stores,
)

# The fixtures this module uses beyond tests/conftest.py's.
vector_database = vector_database
vector_stores = vector_stores

THIRD = "third-embed"


@pytest.fixture
def engine() -> str:
    return "sqlite"


def topics(hits: Any) -> list[str]:
    return [hit.note.topic for hit in hits]


async def ids_with_vectors(
    vs: VectorStores, state: EmbeddingState, kind: str, scopes: tuple[Scope, ...]
) -> set[int]:
    """The items of `scopes` that have a vector in the tables of `state`."""
    index = vs.index(None)
    index.state = state
    found = await index.nearest(kind, [1.0] * state.dim, explicit(scopes), 100_000)
    return {item for item, _ in found}


async def interrupt_reembed(vs: VectorStores, model: str, *, batches: int) -> None:
    """Start `reembed` to `model` in batches of two and stop it (as a kill would) while it
    waits for the answer after `batches` committed batches."""
    vs.fake.clear()
    vs.fake.hold_embeds(after=batches + 1)  # the dimension probe, then the batches
    task = asyncio.create_task(reembed(vs.db, vs.embedder(model), batch_size=2))
    try:
        await vs.fake.wait_for_requests(batches + 2, "/api/embed", within=10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        vs.fake.release_embeds()


async def six_notes(vs: VectorStores) -> list[int]:
    ids = [await vs.note(C1, f"item-{n}", f"summary {n}") for n in range(6)]
    await vs.vectors.backfill()
    return ids


async def test_an_abandoned_reembed_for_another_model_is_dropped(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    vs.fake.models.append(THIRD)
    ids = await six_notes(vs)
    await interrupt_reembed(vs, OTHER, batches=1)
    state = dict(await vs.rows("SELECT key, value FROM embedding_state"))
    assert (state["model"], state["next_model"]) == ("embed-test:latest", "other-embed:latest")

    result = await reembed(vs.db, vs.embedder(THIRD), batch_size=2)

    assert not result.resumed and result.embedded == {"note": 6, "message": 0}
    assert result.state == EmbeddingState("third-embed:latest", DIM, 3)
    assert set(await vs.vector_tables()) == {"vec_messages_3", "vec_notes_3"}
    assert await ids_with_vectors(vs, result.state, NOTE, (C1,)) == set(ids)
    assert dict(await vs.rows("SELECT key, value FROM embedding_state")) == {
        "model": "third-embed:latest",
        "dim": str(DIM),
        "generation": "3",
    }


async def test_a_note_updated_while_a_reembed_is_paused_gets_its_new_vector(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    ids = await six_notes(vs)
    await interrupt_reembed(vs, OTHER, batches=2)  # item-0 … item-3 have new vectors
    # lorebot runs on with the old model meanwhile, as it may: item-1 changes.
    vs.fake.vectors["what changed in item one"] = unit(3)
    await vs.note(C1, "item-1", "changed summary", vector=unit(3))
    await vs.vectors.backfill()

    await reembed(vs.db, vs.embedder(OTHER), batch_size=2)

    moved = vs.again(OTHER)
    await moved.vectors.prepare()
    view = visibility_for(Viewer(ALICE, C1))
    [(nearest, distance)] = await moved.vectors.nearest(NOTE, unit(3), view, 1)
    assert (nearest, distance) == (ids[1], pytest.approx(0.0, abs=1e-6))
    assert topics(await moved.notes.search("what changed in item one", view, k=1)) == ["item-1"]


async def test_a_note_forgotten_while_a_reembed_is_paused_leaves_no_vector(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    ids = await six_notes(vs)
    await interrupt_reembed(vs, OTHER, batches=2)
    await vs.forget(C1, "item-2")
    await vs.vectors.backfill()

    result = await reembed(vs.db, vs.embedder(OTHER), batch_size=2)

    assert result.resumed
    assert await ids_with_vectors(vs, result.state, NOTE, (C1,)) == set(ids) - {ids[2]}
