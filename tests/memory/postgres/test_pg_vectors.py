"""Vectors on PostgreSQL with pgvector, against a real server (pgserver's PostgreSQL 16) and
a real Ollama client talking to the fake Ollama.

Covers: pgvector enabled on first use and earlier notes queued; notes queued by the
trigger and embedded by backfill; nearest within what a conversation may read (notes and
messages); a changed, turned-private or forgotten note; a note changed while it was being
embedded; another model or dimension stopping with nothing changed; the query cache and
backoff; `run()`; and, on Debian's PostgreSQL 15 (no pgvector) and for a role that may not
enable it, recall by words alone with the reason kept for `lorebot doctor`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from psycopg.conninfo import make_conninfo

from bot.model.ollama import OllamaEmbedder
from memory import Scope, Viewer, Visibility, visibility_for
from memory.conversations import LogEntry
from memory.embeddings import message_text, note_text
from memory.errors import EmbeddingMismatch
from memory.postgres.database import PostgresDatabase
from memory.postgres.message_search import PostgresMessageSearch
from memory.postgres.vector_tables import PostgresVectorTables
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.vectors import MESSAGE, NOTE, Coverage
from tests.fakes.ollama import FakeOllama
from tests.support import pgvector
from tests.support.pgvector import PgvectorServer

# The pgserver fixtures, for this module only (tests/conftest.py does not load them).
pgvector_server = pgvector.pgvector_server
pgvector_url = pgvector.pgvector_url

EMBED = "embed-test"
OTHER = "other-embed"
DIM = 8

C1 = Scope.parse("channel:slack/C1")
C2 = Scope.parse("channel:slack/C2")
ALICE = Scope.parse("user:slack/UALICE")
BOB = Scope.parse("user:slack/UBOB")
T1 = Scope.parse("team:slack/T1")


def unit(axis: int, dim: int = DIM) -> list[float]:
    return [1.0 if i == axis else 0.0 for i in range(dim)]


def at_angle(degrees: float, dim: int = DIM) -> list[float]:
    rad = math.radians(degrees)
    return [math.cos(rad), math.sin(rad)] + [0.0] * (dim - 2)


@dataclass
class Pg:
    db: PostgresDatabase
    fake: FakeOllama
    vectors: SqlVectorIndex | None = None
    embedders: list[OllamaEmbedder] = field(default_factory=list)

    @property
    def index(self) -> SqlVectorIndex:
        assert self.vectors is not None
        return self.vectors

    def embedder(self, model: str = EMBED) -> OllamaEmbedder:
        """A real Ollama embedder for the fake, closed after the test."""
        embedder = OllamaEmbedder(self.fake.url, model, timeout_s=5.0)
        self.embedders.append(embedder)
        return embedder

    async def note(
        self,
        scope: Scope,
        topic: str,
        summary: str,
        *,
        body: str = "",
        private: bool = False,
        vector: list[float] | None = None,
    ) -> int:
        """Save (or change) a note as the note store would, its vector scripted."""
        if vector is not None:
            self.fake.vectors[note_text(topic, summary, body)] = vector
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO notes (scope, topic, summary, body, category, private, "
                "created_at, updated_at) VALUES (%s, %s, %s, %s, 'fact', %s, now(), now()) "
                "ON CONFLICT (scope, topic) DO UPDATE SET summary = excluded.summary, "
                "body = excluded.body, private = excluded.private, updated_at = now() "
                "RETURNING id",
                (str(scope), topic, summary, body, private),
            )
            row = await cursor.fetchone()
        assert row is not None
        return int(row["id"])

    async def forget(self, scope: Scope, topic: str) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "DELETE FROM notes WHERE scope = %s AND topic = %s", (str(scope), topic)
            )

    async def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r.values()) for r in await self.db.rows(sql)]

    async def close(self) -> None:
        await self.db.close()
        for embedder in self.embedders:
            await embedder.aclose()


@contextlib.asynccontextmanager
async def opened(url: str, fake: FakeOllama) -> AsyncIterator[Pg]:
    fake.models = [EMBED, OTHER]
    pg = Pg(await PostgresDatabase.open(url), fake)
    try:
        yield pg
    finally:
        await pg.close()


@pytest.fixture
async def pg(pgvector_url: str, fake_ollama: FakeOllama) -> AsyncIterator[Pg]:
    """A lorebot database on pgserver with vectors set up for EMBED."""
    async with opened(pgvector_url, fake_ollama) as pg:
        pg.vectors = SqlVectorIndex(pg.db, pg.embedder(), PostgresVectorTables(pg.db))
        await pg.vectors.prepare()
        assert pg.vectors.enabled
        yield pg


def ids(found: list[tuple[int, float]]) -> list[int]:
    return [item for item, _ in found]


# --- setting up -------------------------------------------------------------------------


async def test_first_prepare_enables_pgvector_and_queues_the_notes_saved_before(
    pgvector_url: str, fake_ollama: FakeOllama
) -> None:
    async with opened(pgvector_url, fake_ollama) as pg:
        assert "vector" not in pg.db.extensions  # a new database: lorebot enables it
        older = [await pg.note(C1, f"old-{n}", f"older note {n}", vector=unit(n)) for n in range(3)]
        index = SqlVectorIndex(pg.db, pg.embedder(), PostgresVectorTables(pg.db))

        await index.prepare()

        assert index.enabled and index.unavailable is None
        assert pg.db.extensions["vector"] == "0.6.2"
        assert index.state is not None
        assert (index.state.model, index.state.dim) == ("embed-test:latest", DIM)
        assert await index.pending() == 3
        assert await index.coverage(NOTE) == Coverage(0, 3)
        assert await index.backfill() == 3
        assert await index.pending() == 0
        assert await index.coverage(NOTE) == Coverage(3, 3)
        [(nearest, distance)] = await index.nearest(
            NOTE, unit(1), visibility_for(Viewer(ALICE, C1)), 1
        )
        assert (nearest, distance) == (older[1], pytest.approx(0.0, abs=1e-6))
        columns = await pg.rows(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute AS a "
            "WHERE a.attrelid = 'vec_notes_1'::regclass AND a.attnum > 0 ORDER BY a.attnum"
        )
        assert columns == [
            ("id", "bigint"), ("scope", "text"), ("private", "boolean"),
            ("embedding", f"vector({DIM})"),
        ]  # fmt: skip
        indexes = await pg.rows("SELECT indexdef FROM pg_indexes WHERE tablename = 'vec_notes_1'")
        assert any("(scope)" in definition for (definition,) in indexes)


async def test_notes_saved_later_are_queued_by_the_trigger_and_embedded_by_backfill(
    pg: Pg,
) -> None:
    view = visibility_for(Viewer(ALICE, C1))
    first = await pg.note(C1, "vpn", "the vpn is vpn-1", vector=unit(2))
    assert await pg.index.pending() == 1
    assert await pg.index.fetch_gap(NOTE) == Coverage(0, 1)
    assert await pg.index.nearest(NOTE, unit(2), view, 5) == []  # no vector yet

    assert await pg.index.backfill() == 1

    assert await pg.index.pending() == 0
    assert await pg.index.fetch_gap(NOTE) is None
    assert ids(await pg.index.nearest(NOTE, unit(2), view, 5)) == [first]
    second = await pg.note(C1, "dns", "dns is dns-1", vector=at_angle(60))
    await pg.index.backfill()
    found = await pg.index.nearest(NOTE, unit(0), view, 5)
    assert ids(found) == [second, first]  # nearest first
    assert [d for _, d in found] == [pytest.approx(0.5, abs=1e-6), pytest.approx(1.0, abs=1e-6)]


async def test_the_same_model_again_reuses_the_stored_vectors(pg: Pg) -> None:
    await pg.note(C1, "kept", "kept note", vector=unit(3))
    await pg.index.backfill()
    before = await pg.rows("SELECT id, scope, private, embedding::text FROM vec_notes_1")

    again = SqlVectorIndex(pg.db, pg.embedder(f"{EMBED}:latest"), PostgresVectorTables(pg.db))
    await again.prepare()

    assert again.enabled and again.state == pg.index.state
    assert await again.pending() == 0
    assert await pg.rows("SELECT id, scope, private, embedding::text FROM vec_notes_1") == before


# --- what a conversation may read -------------------------------------------------------

PLACES = [
    (C1, False), (C2, False), (ALICE, False), (ALICE, True), (BOB, False), (BOB, True),
    (T1, False),
]  # fmt: skip


def may_read(viewer: Viewer, scope: Scope, private: bool) -> bool:
    """DESIGN's table, restated independently of memory.visibility."""
    if viewer.team is not None and scope == viewer.team:
        return True
    if viewer.channel is None:
        return scope == viewer.speaker
    return scope == viewer.channel or (scope == viewer.speaker and not private)


@pytest.mark.parametrize(
    "viewer",
    [
        pytest.param(Viewer(ALICE, C1, T1), id="alice-in-c1-with-team"),
        pytest.param(Viewer(ALICE, C1), id="alice-in-c1"),
        pytest.param(Viewer(ALICE, None, T1), id="alice-dm-with-team"),
        pytest.param(Viewer(BOB, C2), id="bob-in-c2"),
    ],
)
async def test_nearest_notes_never_cross_what_the_conversation_may_read(
    pg: Pg, viewer: Viewer
) -> None:
    expected = set()
    for number, (scope, private) in enumerate(PLACES):
        note = await pg.note(scope, f"n-{number}", f"note {number}", private=private,
                             vector=unit(0))  # fmt: skip
        if may_read(viewer, scope, private):
            expected.add(note)
    await pg.index.backfill()

    found = await pg.index.nearest(NOTE, unit(0), visibility_for(viewer), 50)

    assert set(ids(found)) == expected
    assert all(distance == pytest.approx(0.0, abs=1e-6) for _, distance in found)


async def test_a_dm_note_and_another_channels_never_reach_a_channel(pg: Pg) -> None:
    secret = await pg.note(ALICE, "salary", "my salary", private=True, vector=unit(1))
    other = await pg.note(C2, "c2-plans", "c2 plans", vector=unit(1))
    mine = await pg.note(C1, "c1-plans", "c1 plans", vector=at_angle(80))
    await pg.index.backfill()

    in_c1 = await pg.index.nearest(NOTE, unit(1), visibility_for(Viewer(ALICE, C1)), 10)
    in_dm = await pg.index.nearest(NOTE, unit(1), visibility_for(Viewer(ALICE)), 10)

    assert ids(in_c1) == [mine]
    assert ids(in_dm) == [secret]
    assert other not in ids(in_dm)
    assert await pg.index.nearest(NOTE, unit(1), Visibility((), ()), 10) == []


async def test_messages_are_found_only_in_the_conversations_own_scopes(pg: Pg) -> None:
    pg.fake.vectors_containing["gateway"] = unit(4)
    log = SqlConversationLog(pg.db, PostgresMessageSearch(pg.db))
    await log.append("slack/C1/t", [LogEntry("user", "the gateway moved", "user:slack/UALICE",
                                             "Alice")], scope=str(C1))  # fmt: skip
    await log.append("slack/C2/t", [LogEntry("user", "our gateway too", "user:slack/UBOB",
                                             "Bob")], scope=str(C2))  # fmt: skip
    await log.append("dm/UALICE", [LogEntry("user", "gateway in a DM", "user:slack/UALICE",
                                            "Alice")], scope=str(ALICE))  # fmt: skip
    await log.append("unscoped", [LogEntry("user", "gateway, unscoped")])
    assert await pg.index.coverage(MESSAGE) == Coverage(0, 3)  # the unscoped one never counts
    await pg.index.backfill()
    assert await pg.index.coverage(MESSAGE) == Coverage(3, 3)
    scopes = dict(await pg.rows("SELECT id, scope FROM messages"))

    in_c1 = await pg.index.nearest(MESSAGE, unit(4), visibility_for(Viewer(ALICE, C1)), 10)
    in_dm = await pg.index.nearest(MESSAGE, unit(4), visibility_for(Viewer(ALICE)), 10)

    # ALICE's scope is public_only in C1: notes of it may show there, messages never.
    assert [scopes[i] for i in ids(in_c1)] == [str(C1)]
    assert [scopes[i] for i in ids(in_dm)] == [str(ALICE)]
    inputs = [body["input"] for body in pg.fake.requests_to("/api/embed")]
    embedded = [text for i in inputs for text in (i if isinstance(i, list) else [i])]
    assert message_text("the gateway moved") in embedded
    assert not any("unscoped" in text for text in embedded)


# --- changes ----------------------------------------------------------------------------


async def test_a_changed_note_is_embedded_again_and_a_forgotten_one_leaves(pg: Pg) -> None:
    view = visibility_for(Viewer(ALICE, C1))
    note = await pg.note(C1, "vpn", "vpn is vpn-1", vector=unit(4))
    near_new = [0.0] * 5 + [0.8, 0.6, 0.0]  # cosine distance 0.2 from unit(5)
    other = await pg.note(C1, "other", "something else", vector=near_new)
    await pg.index.backfill()
    assert ids(await pg.index.nearest(NOTE, unit(5), view, 1)) == [other]

    await pg.note(C1, "vpn", "vpn moved to vpn-2", vector=unit(5))
    assert await pg.index.pending() == 1
    await pg.index.backfill()

    [(nearest, distance)] = await pg.index.nearest(NOTE, unit(5), view, 1)
    assert (nearest, distance) == (note, pytest.approx(0.0, abs=1e-6))
    assert await pg.index.nearest(NOTE, unit(4), view, 1) != [(note, pytest.approx(0.0))]

    await pg.forget(C1, "vpn")
    assert await pg.index.pending() == 1
    assert note in ids(await pg.index.nearest(NOTE, unit(5), view, 10))
    await pg.index.backfill()
    assert ids(await pg.index.nearest(NOTE, unit(5), view, 10)) == [other]
    assert await pg.index.pending() == 0


async def test_a_note_turned_private_leaves_channels_once_embedded_again(pg: Pg) -> None:
    in_channel = visibility_for(Viewer(ALICE, C1))
    note = await pg.note(ALICE, "rollback", "my rollback notes", vector=unit(6))
    await pg.index.backfill()
    assert ids(await pg.index.nearest(NOTE, unit(6), in_channel, 5)) == [note]

    await pg.note(ALICE, "rollback", "my rollback notes", private=True, vector=unit(6))
    await pg.index.backfill()

    assert await pg.index.nearest(NOTE, unit(6), in_channel, 5) == []
    assert ids(await pg.index.nearest(NOTE, unit(6), visibility_for(Viewer(ALICE)), 5)) == [note]


async def test_a_note_changed_while_it_is_embedded_stays_queued_for_its_new_text(
    pg: Pg,
) -> None:
    view = visibility_for(Viewer(ALICE, C1))
    note = await pg.note(C1, "pager", "pager is Dana", vector=unit(1))
    pg.fake.clear()
    pg.fake.hold_embeds(after=0)
    task = asyncio.create_task(pg.index.backfill(limit=1))
    try:
        await pg.fake.wait_for_requests(1, "/api/embed", within=10)
        await pg.note(C1, "pager", "pager is Priya", vector=unit(2))  # while it is embedded
    finally:
        pg.fake.release_embeds()
    assert await task == 1

    assert await pg.index.pending() == 1  # the old text's vector was not kept
    assert await pg.index.nearest(NOTE, unit(1), view, 5) == []
    assert await pg.index.backfill() == 1
    assert await pg.index.pending() == 0
    [(nearest, distance)] = await pg.index.nearest(NOTE, unit(2), view, 1)
    assert (nearest, distance) == (note, pytest.approx(0.0, abs=1e-6))


# --- the embedding model check ----------------------------------------------------------


async def snapshot(pg: Pg) -> dict[str, Any]:
    """Everything a model check could change, as plain data."""
    tables = await pg.rows(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
    )
    return {
        "tables": tables,
        "state": await pg.rows("SELECT key, value FROM embedding_state ORDER BY key"),
        "queue": await pg.rows("SELECT kind, item_id FROM embed_queue ORDER BY kind, item_id"),
        "notes": await pg.rows("SELECT id, scope, topic, summary FROM notes ORDER BY id"),
        "messages": await pg.rows("SELECT id, content FROM messages ORDER BY id"),
        "vectors": {
            name: await pg.rows(
                f"SELECT id, scope, private, embedding::text FROM {name} ORDER BY id"
            )  # fmt: skip
            for (name,) in tables
            if name.startswith("vec_")
        },
    }


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
    pg: Pg, model: str, dim: int, configured: str
) -> None:
    for n in range(3):
        await pg.note(C1, f"note-{n}", f"summary {n}")
    await SqlConversationLog(pg.db, PostgresMessageSearch(pg.db)).append(
        "slack/C1/t", [LogEntry("user", "hello", "user:slack/UALICE", "Alice")], scope=str(C1)
    )
    await pg.index.backfill()
    await pg.note(C1, "queued", "saved after the backfill")
    before = await snapshot(pg)
    assert len(before["queue"]) == 1
    assert {name: len(rows) for name, rows in before["vectors"].items()} == {
        "vec_notes_1": 3, "vec_messages_1": 1,
    }  # fmt: skip
    pg.fake.embedding_dim = dim
    probes = len(pg.fake.requests_to("/api/embed"))

    with pytest.raises(EmbeddingMismatch) as raised:
        await SqlVectorIndex(pg.db, pg.embedder(model), PostgresVectorTables(pg.db)).prepare()

    message = str(raised.value)
    assert "embed-test:latest (8 dimensions)" in message
    assert configured in message
    assert "lorebot notes reembed" in message and "Nothing was changed" in message
    assert await snapshot(pg) == before
    if model == OTHER:  # known to differ by name: the model is not even asked
        assert len(pg.fake.requests_to("/api/embed")) == probes


async def test_a_vector_of_another_dimension_is_never_stored(pg: Pg) -> None:
    await pg.note(C1, "short", "a short vector", vector=[1.0, 0.0])

    with pytest.raises(EmbeddingMismatch, match="returned 2 dimensions"):
        await pg.index.backfill()

    assert await pg.index.pending() == 1
    assert await pg.rows("SELECT id FROM vec_notes_1") == []


# --- query vectors ----------------------------------------------------------------------


async def test_query_vectors_are_cached_and_a_failing_model_is_not_asked_every_turn(
    pg: Pg,
) -> None:
    pg.fake.vectors["who is on call"] = unit(3)
    pg.fake.clear()
    assert await pg.index.query_vector("who is on call") == unit(3)
    assert await pg.index.query_vector("who is on call") == unit(3)
    assert len(pg.fake.requests_to("/api/embed")) == 1  # the second came from the cache

    await pg.fake.down()
    assert await pg.index.query_vector("what changed today") is None
    await pg.fake.up()
    assert await pg.index.query_vector("what changed today") is None  # still backing off
    assert len(pg.fake.requests_to("/api/embed")) == 1
    assert await pg.index.query_vector("who is on call") == unit(3)  # cached meanwhile

    await pg.note(C1, "any", "any note")
    await pg.index.backfill()  # the model answers again: the backoff is over
    assert await pg.index.query_vector("what changed today") is not None
    assert await pg.index.query_vector("   ") is None


async def test_run_keeps_the_vectors_up_to_date(pg: Pg) -> None:
    task = asyncio.create_task(pg.index.run(idle_s=0.01))
    try:
        note = await pg.note(C1, "late", "saved while run() runs", vector=unit(7))
        async with asyncio.timeout(10):
            while await pg.index.pending():  # noqa: ASYNC110 (the state is in PostgreSQL)
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert ids(await pg.index.nearest(NOTE, unit(7), visibility_for(Viewer(ALICE, C1)), 1)) == [
        note
    ]


# --- without pgvector -------------------------------------------------------------------


async def words_alone(index: SqlVectorIndex, pg: Pg) -> None:
    """What an index without pgvector does: nothing, and nothing fails."""
    assert not index.enabled and index.state is None
    await pg.note(C1, "plain", "a note without a vector")
    assert await index.pending() == 0  # the trigger queues nothing without a model
    assert await pg.rows("SELECT key FROM embedding_state") == []
    assert await index.query_vector("anything") is None
    assert await index.nearest(NOTE, unit(0), visibility_for(Viewer(ALICE, C1)), 5) == []
    assert await index.backfill() == 0
    assert await index.coverage(NOTE) == Coverage(0, 1)
    assert await index.fetch_gap(NOTE) is None
    async with asyncio.timeout(5):
        await index.run(idle_s=0.01)  # returns at once: there is nothing to keep up
    assert pg.fake.requests_to("/api/embed") == []
    assert "vector" not in pg.db.extensions


async def test_without_pgvector_recall_is_by_words_alone_and_doctor_is_told_why(
    pg_url: str, fake_ollama: FakeOllama, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memory.sql.vectors")
    async with opened(pg_url, fake_ollama) as pg:  # Debian's PostgreSQL 15: no pgvector
        index = SqlVectorIndex(pg.db, pg.embedder(), PostgresVectorTables(pg.db))

        await index.prepare()
        await index.prepare()

        assert index.unavailable is not None
        assert index.unavailable.startswith(
            "pgvector is not installed on this PostgreSQL server: recall is by words alone "
            "(CREATE EXTENSION vector needs"
        )
        assert "postgresql-15-pgvector" in index.unavailable
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warnings == [index.unavailable]  # said once
        await words_alone(index, pg)


async def test_a_role_that_may_not_enable_pgvector_gets_words_alone_and_the_reason(
    pgvector_server: PgvectorServer, fake_ollama: FakeOllama
) -> None:
    pgvector_server.sql("DROP ROLE IF EXISTS lorebot_app")
    pgvector_server.sql("CREATE ROLE lorebot_app LOGIN")
    pgvector_server.sql("CREATE DATABASE owned_by_app OWNER lorebot_app")
    url = make_conninfo(pgvector_server.uri, dbname="owned_by_app", user="lorebot_app")
    try:
        async with opened(url, fake_ollama) as pg:
            index = SqlVectorIndex(pg.db, pg.embedder(), PostgresVectorTables(pg.db))

            await index.prepare()

            assert index.unavailable is not None
            assert "may not enable it: recall is by words alone" in index.unavailable
            assert "CREATE EXTENSION vector needs a superuser" in index.unavailable
            await words_alone(index, pg)
    finally:
        pgvector_server.sql("DROP DATABASE IF EXISTS owned_by_app WITH (FORCE)")
        pgvector_server.sql("DROP ROLE IF EXISTS lorebot_app")


async def test_without_an_embedding_model_pgvector_is_left_alone(
    pgvector_url: str, fake_ollama: FakeOllama
) -> None:
    async with opened(pgvector_url, fake_ollama) as pg:
        index = SqlVectorIndex(pg.db, None, PostgresVectorTables(pg.db))

        await index.prepare()

        assert not index.enabled and index.unavailable is None
        assert "vector" not in pg.db.extensions
        assert await pg.rows("SELECT extname FROM pg_extension WHERE extname = 'vector'") == []
