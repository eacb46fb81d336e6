"""The vector index on each engine (sqlite-vec in a file, pgvector on pgserver's PostgreSQL
16), fed by real Ollama clients talking to the fake Ollama.

Covers: notes queued by the trigger and embedded by backfill, also those saved while
Ollama is down or before vectors were set up; nearest within what a conversation may read
(notes and messages), in recall as in the index; a changed, turned-private or forgotten
note; a note changed while it was being embedded; the query cache and backoff; and
`run()`. Elsewhere: the embedding model check (test_vector_model_check.py), fused recall
(test_hybrid_recall.py), and what only one engine does (sqlite/test_reembed.py,
postgres/test_pg_vectors.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from memory import Viewer, Visibility, visibility_for
from memory.embeddings import message_text
from memory.stores.conversations import LogEntry
from memory.stores.vectors import MESSAGE, NOTE, Coverage
from tests.fakes.ollama import FakeOllama
from tests.support import pgvector
from tests.support.clock import FakeClock
from tests.support.vector_stores import (
    ALICE,
    BOB,
    C1,
    C2,
    T1,
    T2,
    VectorStores,
    at_angle,
    ids,
    may_read,
    opened,
    topics,
    unit,
    vector_database,
    vector_stores,
)

# The fixtures this module uses beyond tests/conftest.py's.
pgvector_server = pgvector.pgvector_server
pgvector_url = pgvector.pgvector_url
vector_database = vector_database
vector_stores = vector_stores


# --- the queue --------------------------------------------------------------------------


async def test_notes_saved_later_are_queued_by_the_trigger_and_embedded_by_backfill(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    view = visibility_for(Viewer(ALICE, C1))
    first = await vs.note(C1, "vpn", "the vpn is vpn-1", vector=unit(2))
    assert await vs.vectors.pending() == 1
    assert await vs.vectors.fetch_gap(NOTE) == Coverage(0, 1)
    assert await vs.vectors.nearest(NOTE, unit(2), view, 5) == []  # no vector yet

    assert await vs.vectors.backfill() == 1

    assert await vs.vectors.pending() == 0
    assert await vs.vectors.fetch_gap(NOTE) is None
    assert ids(await vs.vectors.nearest(NOTE, unit(2), view, 5)) == [first]
    second = await vs.note(C1, "dns", "dns is dns-1", vector=at_angle(60))
    await vs.vectors.backfill()
    found = await vs.vectors.nearest(NOTE, unit(0), view, 5)
    assert ids(found) == [second, first]  # nearest first
    near = vs.close_to
    assert [d for _, d in found] == [pytest.approx(0.5, abs=near), pytest.approx(1.0, abs=near)]


async def test_first_start_while_ollama_is_down_sets_vectors_up_once_it_answers(
    engine: str, vector_database: str | Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.vectors["who reviews terraform"] = unit(6)
    async with opened(engine, vector_database, fake_ollama, clock) as vs:
        await vs.note(C1, "infra-review", "Priya approves infrastructure changes", vector=unit(6))
        await fake_ollama.down()

        await vs.vectors.prepare()

        assert not vs.vectors.enabled
        view = Visibility(full=(C1,), public_only=())
        assert topics(await vs.notes.search("infrastructure changes", view)) == ["infra-review"]
        await fake_ollama.up()
        await vs.vectors.prepare()
        assert vs.vectors.enabled and await vs.vectors.pending() == 1  # the older note queued
        assert await vs.vectors.backfill() == 1
        assert topics(await vs.notes.search("who reviews terraform", view)) == ["infra-review"]


async def test_saves_while_ollama_is_down_are_kept_then_embedded_by_backfill(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    view = visibility_for(Viewer(ALICE, C1))
    vector_query = "who gets paged first"
    vs.fake.vectors[vector_query] = unit(3)
    await vs.fake.down()

    saved = [
        await vs.note(
            C1,
            "escalation-path",
            "Dana is the primary contact",
            body="ten minutes without acknowledgement: Dana",
            vector=unit(3),
        ),
        await vs.note(C1, "deploy-window", "deploys happen on tuesday"),
        await vs.note(ALICE, "editor", "vim for tuesday deploys"),
    ]

    assert sorted(n.id for n in await vs.notes.list_notes()) == sorted(saved)
    assert await vs.vectors.pending() == 3
    # Words alone still find what was saved.
    assert set(topics(await vs.notes.search("tuesday deploys", view))) == {
        "deploy-window",
        "editor",
    }
    assert await vs.notes.search(vector_query, view) == []

    await vs.fake.up()
    assert await vs.notes.search(vector_query, view) == []  # no note has a vector yet
    assert await vs.vectors.backfill() == 3
    assert await vs.vectors.pending() == 0

    assert topics(await vs.notes.search(vector_query, view, k=1)) == ["escalation-path"]


# --- what a conversation may read -------------------------------------------------------

NEAR = "zulu-near-marker"
QUERY = "rollback procedure"

# Every note says the query words and embeds exactly as the query; each scope also has a
# note that only the vector finds. (scope, private) pairs:
PLACES = [
    (C1, False),
    (C2, False),
    (ALICE, False),
    (ALICE, True),
    (BOB, False),
    (BOB, True),
    (T1, False),
    (T2, False),
]

VIEWERS = [
    pytest.param(Viewer(ALICE, C1, T1), id="alice-in-c1-with-team"),
    pytest.param(Viewer(ALICE, C1), id="alice-in-c1"),
    pytest.param(Viewer(ALICE, None, T1), id="alice-dm-with-team"),
    pytest.param(Viewer(BOB, C2), id="bob-in-c2"),
    pytest.param(Viewer(BOB, C2, T2), id="bob-in-c2-with-team2"),
]


@pytest.mark.parametrize("viewer", VIEWERS)
async def test_vector_hits_never_cross_what_the_conversation_may_read(
    vector_stores: VectorStores, viewer: Viewer
) -> None:
    vs = vector_stores
    vs.fake.vectors[QUERY] = unit(2)
    vs.fake.vectors_containing[NEAR] = unit(2)
    expected: set[int] = set()
    for number, (scope, private) in enumerate(PLACES):
        for topic, summary in (
            (f"rollback-{number}", f"{QUERY} number {number}"),
            (f"quiet-{number}", f"quarterly planning {number}"),
        ):
            note_id = await vs.note(scope, topic, summary, body=NEAR, private=private)
            if may_read(viewer, scope, private):
                expected.add(note_id)
    await vs.vectors.backfill()
    view = visibility_for(viewer)

    hits = await vs.notes.search(QUERY, view, k=50)

    assert {h.note.id for h in hits} == expected  # vector-only notes included
    nearest = await vs.vectors.nearest(NOTE, unit(2), view, 50)
    assert set(ids(nearest)) == expected
    assert all(distance == pytest.approx(0.0, abs=1e-6) for _, distance in nearest)


async def test_a_dm_note_and_another_channels_never_reach_a_channel(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    secret = await vs.note(ALICE, "salary", "my salary", private=True, vector=unit(1))
    other = await vs.note(C2, "c2-plans", "c2 plans", vector=unit(1))
    mine = await vs.note(C1, "c1-plans", "c1 plans", vector=at_angle(80))
    await vs.vectors.backfill()

    in_c1 = await vs.vectors.nearest(NOTE, unit(1), visibility_for(Viewer(ALICE, C1)), 10)
    in_dm = await vs.vectors.nearest(NOTE, unit(1), visibility_for(Viewer(ALICE)), 10)

    assert ids(in_c1) == [mine]
    assert ids(in_dm) == [secret]
    assert other not in ids(in_dm)
    assert await vs.vectors.nearest(NOTE, unit(1), Visibility((), ()), 10) == []


async def test_messages_are_found_only_in_the_conversations_own_scopes(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    vs.fake.vectors_containing["gateway"] = unit(4)
    await vs.log.append(
        "slack/C1/t",
        [LogEntry("user", "the gateway moved", "user:slack/UALICE", "Alice")],
        scope=str(C1),
    )
    await vs.log.append(
        "slack/C2/t", [LogEntry("user", "our gateway too", "user:slack/UBOB", "Bob")], scope=str(C2)
    )
    await vs.log.append(
        "dm/UALICE",
        [LogEntry("user", "gateway in a DM", "user:slack/UALICE", "Alice")],
        scope=str(ALICE),
    )
    await vs.log.append("unscoped", [LogEntry("user", "gateway, unscoped")])
    assert await vs.vectors.coverage(MESSAGE) == Coverage(0, 3)  # the unscoped one never counts
    await vs.vectors.backfill()
    assert await vs.vectors.coverage(MESSAGE) == Coverage(3, 3)
    scopes = dict(await vs.rows("SELECT id, scope FROM messages"))

    in_c1 = await vs.vectors.nearest(MESSAGE, unit(4), visibility_for(Viewer(ALICE, C1)), 10)
    in_dm = await vs.vectors.nearest(MESSAGE, unit(4), visibility_for(Viewer(ALICE)), 10)

    # ALICE's scope is public_only in C1: notes of it may show there, messages never.
    assert [scopes[i] for i in ids(in_c1)] == [str(C1)]
    assert [scopes[i] for i in ids(in_dm)] == [str(ALICE)]
    inputs = [body["input"] for body in vs.fake.requests_to("/api/embed")]
    embedded = [text for i in inputs for text in (i if isinstance(i, list) else [i])]
    assert message_text("the gateway moved") in embedded
    assert not any("unscoped" in text for text in embedded)


# --- changes ----------------------------------------------------------------------------


async def test_a_changed_note_is_embedded_again_and_a_forgotten_one_leaves(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    view = visibility_for(Viewer(ALICE, C1))
    vs.fake.vectors["old question"] = unit(4)
    vs.fake.vectors["new question"] = unit(5)
    near_new = [0.0] * 5 + [0.8, 0.6, 0.0]  # cosine distance 0.2 from unit(5)
    note = await vs.note(C1, "vpn", "vpn is vpn-1", vector=unit(4))
    other = await vs.note(C1, "other", "something else", vector=near_new)
    await vs.vectors.backfill()
    assert ids(await vs.vectors.nearest(NOTE, unit(5), view, 1)) == [other]
    assert topics(await vs.notes.search("new question", view, k=1)) == ["other"]

    await vs.note(C1, "vpn", "vpn moved to vpn-2", vector=unit(5))
    assert await vs.vectors.pending() == 1
    assert topics(await vs.notes.search("new question", view, k=1)) == ["other"]
    await vs.vectors.backfill()

    [(nearest, distance)] = await vs.vectors.nearest(NOTE, unit(5), view, 1)
    assert (nearest, distance) == (note, pytest.approx(0.0, abs=1e-6))
    assert await vs.vectors.nearest(NOTE, unit(4), view, 1) != [(note, pytest.approx(0.0))]
    assert topics(await vs.notes.search("new question", view, k=1)) == ["vpn"]

    await vs.forget(C1, "vpn")
    assert await vs.vectors.pending() == 1
    assert note in ids(await vs.vectors.nearest(NOTE, unit(5), view, 10))
    await vs.vectors.backfill()
    assert ids(await vs.vectors.nearest(NOTE, unit(5), view, 10)) == [other]
    assert await vs.vectors.pending() == 0


async def test_a_note_turned_private_leaves_channel_recall_before_its_vector_is_redone(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    vs.fake.vectors[QUERY] = unit(2)
    vs.fake.vectors_containing[NEAR] = unit(2)
    in_channel = visibility_for(Viewer(ALICE, C1))
    in_dm = visibility_for(Viewer(ALICE))
    note = await vs.note(ALICE, "my-rollback", "personal notes", body=NEAR, private=True)
    await vs.vectors.backfill()
    assert await vs.notes.search(QUERY, in_channel) == []

    await vs.note(ALICE, "my-rollback", "personal notes", body=NEAR)
    assert await vs.vectors.pending() == 1
    await vs.vectors.backfill()
    assert topics(await vs.notes.search(QUERY, in_channel)) == ["my-rollback"]
    assert ids(await vs.vectors.nearest(NOTE, unit(2), in_channel, 5)) == [note]

    # Private again: gone from channels at once, before any backfill.
    await vs.note(ALICE, "my-rollback", "personal notes", body=NEAR, private=True)
    assert await vs.notes.search(QUERY, in_channel) == []
    await vs.vectors.backfill()
    assert await vs.vectors.nearest(NOTE, unit(2), in_channel, 5) == []
    assert ids(await vs.vectors.nearest(NOTE, unit(2), in_dm, 5)) == [note]


# A note's save is an upsert: the trigger that queues it must not fail on one that waits
# already (SQLite's `INSERT OR IGNORE` did, before migration 21).
async def test_a_note_changed_while_it_is_embedded_stays_queued_for_its_new_text(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    view = visibility_for(Viewer(ALICE, C1))
    note = await vs.note(C1, "pager", "pager is Dana", vector=unit(1))
    vs.fake.clear()
    vs.fake.hold_embeds(after=0)
    task = asyncio.create_task(vs.vectors.backfill(limit=1))
    try:
        await vs.fake.wait_for_requests(1, "/api/embed", within=10)
        await vs.note(C1, "pager", "pager is Priya", vector=unit(2))  # while it is embedded
    finally:
        vs.fake.release_embeds()
        done = await task
    assert done == 1

    assert await vs.vectors.pending() == 1  # the old text's vector was not kept
    assert await vs.vectors.nearest(NOTE, unit(1), view, 5) == []
    assert await vs.vectors.backfill() == 1
    assert await vs.vectors.pending() == 0
    [(nearest, distance)] = await vs.vectors.nearest(NOTE, unit(2), view, 1)
    assert (nearest, distance) == (note, pytest.approx(0.0, abs=1e-6))


# --- query vectors ----------------------------------------------------------------------


async def test_query_vectors_are_cached_and_a_failing_model_is_not_asked_every_turn(
    vector_stores: VectorStores,
) -> None:
    vs = vector_stores
    vs.fake.vectors["who is on call"] = unit(3)
    vs.fake.clear()
    assert await vs.vectors.query_vector("who is on call") == unit(3)
    assert await vs.vectors.query_vector("who is on call") == unit(3)
    assert len(vs.fake.requests_to("/api/embed")) == 1  # the second came from the cache

    await vs.fake.down()
    assert await vs.vectors.query_vector("what changed today") is None
    await vs.fake.up()
    assert await vs.vectors.query_vector("what changed today") is None  # still backing off
    assert len(vs.fake.requests_to("/api/embed")) == 1
    assert await vs.vectors.query_vector("who is on call") == unit(3)  # cached meanwhile

    await vs.note(C1, "any", "any note")
    await vs.vectors.backfill()  # the model answers again: the backoff is over
    assert await vs.vectors.query_vector("what changed today") is not None
    assert await vs.vectors.query_vector("   ") is None


async def test_run_keeps_the_vectors_up_to_date(vector_stores: VectorStores) -> None:
    vs = vector_stores
    task = asyncio.create_task(vs.vectors.run(idle_s=0.01))
    try:
        note = await vs.note(C1, "late", "saved while run() runs", vector=unit(7))
        async with asyncio.timeout(10):
            while await vs.vectors.pending():  # noqa: ASYNC110 (the state is in the database)
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    view = visibility_for(Viewer(ALICE, C1))
    assert ids(await vs.vectors.nearest(NOTE, unit(7), view, 1)) == [note]
