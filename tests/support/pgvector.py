"""A real PostgreSQL with pgvector for the tests: pgserver's bundled PostgreSQL 16 (with
pgvector 0.6.2) started in a temporary folder for the session, and an empty database of its
own for each test that asks. (Debian's PostgreSQL, `tests.support.postgres`, has no
pgvector.)

Without the `pgserver` package the tests that need it are skipped, unless
`TESTS_NEED_POSTGRESQL=1` (CI sets it) turns that into a failure. Use the fixtures by
importing them into a test module, or into `tests/conftest.py`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo


@dataclass
class PgvectorServer:
    """One private pgserver PostgreSQL, reached through its Unix socket."""

    uri: str
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def new_database(self) -> str:
        """The connection string of a new, empty database."""
        name = f"vectors_{next(self._names)}"
        self.sql(f"CREATE DATABASE {name}")
        return make_conninfo(self.uri, dbname=name)

    def drop_database(self, url: str) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {conninfo_to_dict(url)['dbname']} WITH (FORCE)")

    def sql(self, statement: str, url: str | None = None) -> list[tuple[Any, ...]]:
        """Run one statement (in the `postgres` database, or at `url`); its rows."""
        with psycopg.connect(url or self.uri, autocommit=True) as conn:
            cursor = conn.execute(statement)
            return cursor.fetchall() if cursor.description else []


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PgvectorServer]:
    try:
        with warnings.catch_warnings():
            # platformdirs warns, at import, when XDG_RUNTIME_DIR is unset.
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        if os.environ.get("TESTS_NEED_POSTGRESQL") == "1":
            pytest.fail("pgserver is not installed: pip install 'pgserver>=0.1.4,<0.2'")
        pytest.skip("pgserver (PostgreSQL with pgvector) is not installed here")
    root = Path(tempfile.mkdtemp(prefix="lorebot-pgvector-"))
    server = pgserver.get_server(root / "data", cleanup_mode="stop")
    try:
        yield PgvectorServer(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pgvector_url(pgvector_server: PgvectorServer) -> Iterator[str]:
    """An empty database on the session's pgvector server, dropped after the test."""
    url = pgvector_server.new_database()
    try:
        yield url
    finally:
        pgvector_server.drop_database(url)
