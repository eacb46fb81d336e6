"""No database connection is left open: each keeps a worker thread that would stop the
process from exiting. The database closes both of its connections when opening or closing
fails, and the test suite's guard fails a test that leaves one open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory.sqlite import driver
from memory.sqlite.database import SqliteDatabase
from tests.support.connections import describe, still_open
from tests.support.paths import ROOT


def _failing(sql: str) -> Any:
    """`driver.Connection.execute`, failing on the statement `sql`."""
    real = driver.Connection.execute

    def execute(self: driver.Connection, statement: str, *args: Any) -> Any:
        if statement == sql:
            raise driver.Error(f"injected failure of {sql}")
        return real(self, statement, *args)

    return execute


def all_closed() -> None:
    left = still_open()
    if left:
        pytest.fail(describe(left))


async def test_a_reader_that_fails_to_set_up_closes_both_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver.Connection, "execute", _failing("PRAGMA query_only = 1"))

    with pytest.raises(driver.Error, match="injected"):
        await SqliteDatabase.open(tmp_path / "lorebot.db")

    all_closed()


async def test_closing_closes_both_connections_when_the_deferred_write_fails(
    tmp_path: Path,
) -> None:
    db = await SqliteDatabase.open(tmp_path / "lorebot.db")
    db.defer("INSERT INTO no_such_table VALUES (?)", [(1,)])

    with pytest.raises(driver.Error, match="no_such_table"):
        await db.close()

    all_closed()
    await db.close()  # closed already: nothing to do


LEAKING = """
from memory.sqlite.database import SqliteDatabase


async def test_leaks(tmp_path):
    db = await SqliteDatabase.open(tmp_path / "leaked.db")


async def test_closes(tmp_path):
    db = await SqliteDatabase.open(tmp_path / "closed.db")
    await db.close()


async def test_fails_and_leaks(tmp_path):
    db = await SqliteDatabase.open(tmp_path / "failed.db")
    assert db is None
"""


def test_the_guard_fails_a_test_that_leaves_a_connection_open(tmp_path: Path) -> None:
    (tmp_path / "test_leaking.py").write_text(LEAKING)
    ini = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    (tmp_path / "pytest.ini").write_text(ini + "filterwarnings = error\n")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}

    # The guard closes what was left open, so the run exits (within the timeout).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "-rA",
            "test_leaking.py",
        ],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )

    out = done.stdout
    assert done.returncode == 1, out
    assert "1 failed, 2 passed, 1 error" in out
    assert "ERROR test_leaking.py::test_leaks - Failed: 2 database connection(s)" in out
    assert "test_leaking.py:6 in test_leaks\n    memory/sqlite/database.py:" in out
    assert "PASSED test_leaking.py::test_closes" in out
    # A test that failed anyway is not failed twice.
    assert "FAILED test_leaking.py::test_fails_and_leaks" in out
    assert "ERROR test_leaking.py::test_fails_and_leaks" not in out
