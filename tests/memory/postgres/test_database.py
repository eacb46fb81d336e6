"""The PostgreSQL database on a real server: the schema is created once and at SQLite's
version, a newer one is refused untouched, an unreachable server is said plainly without
the password, and the schema holds the same tables and columns as SQLite's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memory.errors import SchemaTooNew, StoreError, StoreUnavailable
from memory.postgres.database import PostgresDatabase, shown_url
from memory.postgres.migrations import SCHEMA_VERSION
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.migrations import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from tests.support.llama import free_port
from tests.support.postgres import PostgresServer


def test_postgresql_and_sqlite_are_at_the_same_schema_version() -> None:
    assert SCHEMA_VERSION == SQLITE_SCHEMA_VERSION


async def test_a_new_database_gets_the_schema_once(
    pg_url: str, postgres_server: PostgresServer
) -> None:
    db = await PostgresDatabase.open(pg_url)
    try:
        assert await db.fetch_schema_version() == SCHEMA_VERSION
        health = await db.fetch_health()
        assert (health.integrity, health.schema, health.notes) == ("ok", SCHEMA_VERSION, 0)
        assert db.engine.startswith("PostgreSQL 1") and "psycopg 3." in db.engine
    finally:
        await db.close()
    again = await PostgresDatabase.open(pg_url)  # an existing schema is left as it is
    await again.close()
    database = pg_url.rsplit("/", 1)[1]
    assert postgres_server.sql("SELECT count(*) FROM lorebot_schema", database) == "1"


async def test_replicas_starting_together_migrate_once(pg_url: str) -> None:
    import asyncio

    opened = await asyncio.gather(*(PostgresDatabase.open(pg_url) for _ in range(3)))
    try:
        assert [await db.fetch_schema_version() for db in opened] == [SCHEMA_VERSION] * 3
    finally:
        for db in opened:
            await db.close()


async def test_a_newer_schema_is_refused_and_left_untouched(
    pg_url: str, postgres_server: PostgresServer
) -> None:
    db = await PostgresDatabase.open(pg_url)
    await db.close()
    database = pg_url.rsplit("/", 1)[1]
    postgres_server.sql(f"UPDATE lorebot_schema SET version = {SCHEMA_VERSION + 1}", database)
    with pytest.raises(SchemaTooNew, match=f"schema version {SCHEMA_VERSION + 1}.*upgrade"):
        await PostgresDatabase.open(pg_url)
    version = postgres_server.sql("SELECT version FROM lorebot_schema", database)
    assert version == str(SCHEMA_VERSION + 1)


async def test_a_database_without_lorebot_is_not_started_when_creating_is_not_allowed(
    pg_url: str, postgres_server: PostgresServer
) -> None:
    with pytest.raises(StoreError, match="there is no lorebot database at postgresql://"):
        await PostgresDatabase.open(pg_url, create=False)
    tables = postgres_server.sql(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", pg_url.rsplit("/", 1)[1]
    )
    assert tables == "0"


async def test_an_unreachable_server_is_said_plainly_without_the_password() -> None:
    url = f"postgresql://lorebot:hunter2-secret@127.0.0.1:{free_port()}/lorebot"
    with pytest.raises(StoreUnavailable) as raised:
        await PostgresDatabase.open(url, connect_timeout_s=1)
    message = str(raised.value)
    assert "cannot reach PostgreSQL at postgresql://lorebot:***@127.0.0.1" in message
    assert "Connection refused" in message or "connection" in message.lower()
    assert "hunter2" not in message


def test_a_shown_url_hides_only_the_password() -> None:
    assert shown_url("postgresql://bot:s%40cret@db.internal:5433/lore?sslmode=require") == (
        "postgresql://bot:***@db.internal:5433/lore?sslmode=require"
    )
    assert shown_url("postgresql://bot@db/lore") == "postgresql://bot@db/lore"


async def test_backup_on_postgresql_says_to_use_pg_dump(pg_url: str, tmp_path: Path) -> None:
    db = await PostgresDatabase.open(pg_url)
    try:
        with pytest.raises(StoreError, match="pg_dump --format=custom --file=") as raised:
            await db.backup_to(tmp_path / "backup.dump")
        assert pg_url in str(raised.value)
        assert not (tmp_path / "backup.dump").exists()
    finally:
        await db.close()


async def test_the_schema_has_the_tables_and_columns_of_sqlite(
    pg_url: str, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """Every table and column of SQLite's schema is in PostgreSQL's (the word and vector
    indexes are each engine's own)."""
    db = await PostgresDatabase.open(pg_url)
    await db.close()
    printed = postgres_server.sql(
        "SELECT table_name || '.' || column_name FROM information_schema.columns "
        "WHERE table_schema = 'public'",
        pg_url.rsplit("/", 1)[1],
    )
    postgres = set(printed.splitlines())
    lite = await SqliteDatabase.open(tmp_path / "lorebot.db")
    try:
        async with lite.conn.execute(
            "SELECT m.name || '.' || p.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table' AND m.name NOT LIKE '%fts%' AND m.sql NOT LIKE '%VIRTUAL%'"
        ) as cursor:
            sqlite = {row[0] for row in await cursor.fetchall()}
    finally:
        await lite.close()
    assert sqlite - postgres == {"notes.scope_keys"}  # the FTS5 scope tokens of SQLite
    assert postgres - sqlite == {
        "lorebot_schema.only_row",
        "lorebot_schema.version",
        "notes.words",
        "notes.word_count",
        "message_words.message_id",
        "message_words.scope",
        "message_words.words",
        "message_words.word_count",
    }


async def test_a_stop_the_driver_answers_with_an_error_stays_a_stop(pg_url: str) -> None:
    """psycopg may answer a stop that arrives mid-statement with an error of its own (its
    connection closed while cancelling): that must not pass for a store error, or a loop
    that lives through store errors (the heartbeat) runs on and `stop()` never returns."""
    db = await PostgresDatabase.open(pg_url)

    async def stopped_mid_statement() -> None:
        async with db.connection() as conn:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # the stop arrives…
            conn.pgconn.finish()  # …and the driver gives up the connection
            await conn.execute("SELECT 1")

    try:
        statement = asyncio.create_task(stopped_mid_statement())
        await asyncio.wait([statement])
        assert statement.cancelled(), statement.exception()
        assert await db.rows("SELECT 1 AS one") == [{"one": 1}]  # the pool goes on
    finally:
        await db.close()
