"""What only PostgreSQL's vector index does, against real servers and a real Ollama client
talking to the fake Ollama: pgvector enabled on first use in pgserver's PostgreSQL 16, and,
on Debian's PostgreSQL 15 (no pgvector) and for a role that may not enable it, recall by
words alone with the reason kept for `lorebot doctor`. What both engines promise is in
tests/memory/test_vectors.py.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from psycopg.conninfo import make_conninfo

from memory import Viewer, visibility_for
from memory.sql.vectors import SqlVectorIndex
from memory.stores.vectors import NOTE, Coverage
from tests.fakes.ollama import FakeOllama
from tests.support import pgvector
from tests.support.clock import FakeClock
from tests.support.pgvector import PgvectorServer
from tests.support.vector_stores import ALICE, C1, DIM, VectorStores, opened, unit

# The pgserver fixtures, for this module only (tests/conftest.py does not load them).
pgvector_server = pgvector.pgvector_server
pgvector_url = pgvector.pgvector_url

ENGINE = "postgresql"


async def test_first_prepare_enables_pgvector_and_queues_the_notes_saved_before(
    pgvector_url: str, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    async with opened(ENGINE, pgvector_url, fake_ollama, clock) as vs:
        assert "vector" not in vs.db.extensions  # a new database: lorebot enables it
        older = [await vs.note(C1, f"old-{n}", f"older note {n}", vector=unit(n)) for n in range(3)]
        index = vs.vectors

        await index.prepare()

        assert index.enabled and index.unavailable is None
        assert vs.db.extensions["vector"] == "0.6.2"
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
        columns = await vs.rows(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute AS a "
            "WHERE a.attrelid = 'vec_notes_1'::regclass AND a.attnum > 0 ORDER BY a.attnum"
        )
        assert columns == [
            ("id", "bigint"),
            ("scope", "text"),
            ("private", "boolean"),
            ("embedding", f"vector({DIM})"),
        ]
        indexes = await vs.rows("SELECT indexdef FROM pg_indexes WHERE tablename = 'vec_notes_1'")
        assert any("(scope)" in definition for (definition,) in indexes)


# --- without pgvector -------------------------------------------------------------------


async def words_alone(index: SqlVectorIndex, vs: VectorStores) -> None:
    """What an index without pgvector does: nothing, and nothing fails."""
    assert not index.enabled and index.state is None
    await vs.note(C1, "plain", "a note without a vector")
    assert await index.pending() == 0  # the trigger queues nothing without a model
    assert await vs.rows("SELECT key FROM embedding_state") == []
    assert await index.query_vector("anything") is None
    assert await index.nearest(NOTE, unit(0), visibility_for(Viewer(ALICE, C1)), 5) == []
    assert await index.backfill() == 0
    assert await index.coverage(NOTE) == Coverage(0, 1)
    assert await index.fetch_gap(NOTE) is None
    async with asyncio.timeout(5):
        await index.run(idle_s=0.01)  # returns at once: there is nothing to keep up
    assert vs.fake.requests_to("/api/embed") == []
    assert "vector" not in vs.db.extensions


async def test_without_pgvector_recall_is_by_words_alone_and_doctor_is_told_why(
    pg_url: str, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memory.sql.vectors")
    async with opened(ENGINE, pg_url, fake_ollama, clock) as vs:  # Debian's 15: no pgvector
        index = vs.vectors

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
        await words_alone(index, vs)


async def test_a_role_that_may_not_enable_pgvector_gets_words_alone_and_the_reason(
    pgvector_server: PgvectorServer, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    pgvector_server.sql("DROP ROLE IF EXISTS lorebot_app")
    pgvector_server.sql("CREATE ROLE lorebot_app LOGIN")
    pgvector_server.sql("CREATE DATABASE owned_by_app OWNER lorebot_app")
    url = make_conninfo(pgvector_server.uri, dbname="owned_by_app", user="lorebot_app")
    try:
        async with opened(ENGINE, url, fake_ollama, clock) as vs:
            index = vs.vectors

            await index.prepare()

            assert index.unavailable is not None
            assert "may not enable it: recall is by words alone" in index.unavailable
            assert "CREATE EXTENSION vector needs a superuser" in index.unavailable
            await words_alone(index, vs)
    finally:
        pgvector_server.sql("DROP DATABASE IF EXISTS owned_by_app WITH (FORCE)")
        pgvector_server.sql("DROP ROLE IF EXISTS lorebot_app")


async def test_without_an_embedding_model_pgvector_is_left_alone(
    pgvector_url: str, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    async with opened(ENGINE, pgvector_url, fake_ollama, clock) as vs:
        index = vs.index(None)

        await index.prepare()

        assert not index.enabled and index.unavailable is None
        assert "vector" not in vs.db.extensions
        assert await vs.rows("SELECT extname FROM pg_extension WHERE extname = 'vector'") == []
