"""The stores of one database on each engine, so a storage test runs on SQLite and on
PostgreSQL alike: ask for `engine_stores` and the test runs once per engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from memory.stores.stores import StoreOptions
from tests.support.clock import FakeClock

ENGINES = ("sqlite", "postgresql")

# Opens another set of stores on the same database (a second process, or a replica).
OpenAgain = Callable[[], Awaitable[Any]]


async def open_engine(engine: str, where: str | Path, options: StoreOptions) -> Any:
    """The stores of the database at `where` (a file on SQLite, a URL on PostgreSQL)."""
    if engine == "sqlite":
        from memory.sqlite.database import SqliteDatabase
        from memory.sqlite.stores import SqliteStores

        return SqliteStores(await SqliteDatabase.open(where), options)
    from memory.postgres.database import PostgresDatabase
    from memory.postgres.stores import PostgresStores

    return PostgresStores(await PostgresDatabase.open(str(where)), options)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_at(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | Path:
    """Where the test's database is: a file, or a new database on the session's server."""
    if engine == "sqlite":
        return tmp_path / "lorebot.db"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
async def engine_stores(
    engine: str, database_at: str | Path, clock: FakeClock
) -> AsyncIterator[Any]:
    stores = await open_engine(engine, database_at, StoreOptions(clock=clock))
    try:
        yield stores
    finally:
        await stores.close()


@pytest.fixture
async def open_again(
    engine: str, database_at: str | Path, clock: FakeClock
) -> AsyncIterator[OpenAgain]:
    """Open the same database again (closed after the test), as another process would."""
    opened: list[Any] = []

    async def again() -> Any:
        stores = await open_engine(engine, database_at, StoreOptions(clock=clock))
        opened.append(stores)
        return stores

    try:
        yield again
    finally:
        for stores in opened:
            await stores.close()


@pytest.fixture
def cli_database(engine: str, database_at: str | Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The command line's database on each engine: on PostgreSQL through
    LOREBOT_DATABASE__URL, as an operator sets it (ask for it after `env`)."""
    if engine == "postgresql":
        monkeypatch.setenv("LOREBOT_DATABASE__URL", str(database_at))
    return engine
