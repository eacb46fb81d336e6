"""The SQLite driver: one module for the whole process, and a self-test whose message says
what is missing and how to fix it."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from memory import StoreError
from memory.sqlite import driver
from memory.sqlite.database import SqliteDatabase


def test_a_missing_sqlite_vec_names_it_the_driver_and_how_to_turn_vectors_off() -> None:
    problem = "the sqlite-vec package is not installed (pip install sqlite-vec)"
    capabilities = driver.Capabilities(fts5=None, vectors=problem)

    message = capabilities.explain(want_vectors=True)

    assert message is not None
    assert "sqlite-vec does not work" in message and problem in message
    assert driver.driver_name() in message
    assert "ollama.embed_model" in message and "unset it" in message
    assert "\n" not in message
    assert capabilities.explain(want_vectors=False) is None


def test_a_missing_fts5_is_named_with_or_without_vectors() -> None:
    broken = driver.Capabilities(fts5="no such module: fts5", vectors=None)

    for want_vectors in (False, True):
        message = broken.explain(want_vectors=want_vectors)
        assert message is not None
        assert "FTS5 does not work (no such module: fts5)" in message
        assert driver.driver_name() in message
        assert "sqlite-vec" not in message

    both = driver.Capabilities(fts5="no such module: fts5", vectors="cannot load")
    message = both.explain(want_vectors=True)
    assert message is not None and "FTS5" in message and "sqlite-vec" in message
    assert driver.Capabilities(fts5=None, vectors=None).explain(want_vectors=True) is None


def test_the_chosen_module_loads_extensions_and_is_the_stdlib_when_it_can() -> None:
    module = driver.sqlite_module()

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        assert module is sqlite3
    assert hasattr(module.Connection, "enable_load_extension")
    conn = module.connect(":memory:")
    try:
        assert driver.load_vec(conn) is None
        assert conn.execute("SELECT vec_length('[1, 2, 3]')").fetchone()[0] == 3
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    finally:
        conn.close()
    assert driver.Error is module.Error and driver.IntegrityError is module.IntegrityError
    assert module.sqlite_version in driver.driver_name()


async def test_the_real_driver_opens_a_database_with_vectors(tmp_path: Path) -> None:
    db = await SqliteDatabase.open(tmp_path / "v.db", want_vectors=True)
    try:
        assert db.capabilities == driver.Capabilities(fts5=None, vectors=None)
        assert await db.scalar("SELECT vec_distance_cosine('[1, 0]', '[0, 1]')") == 1.0
        # Errors come from the chosen driver, so lorebot's `except driver.Error` sees them.
        with pytest.raises(driver.Error):
            await db.scalar("SELECT * FROM no_such_table")
    finally:
        await db.close()


async def test_without_sqlite_vec_only_a_store_that_wants_vectors_refuses_to_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # as if it were not installed

    with pytest.raises(StoreError) as raised:
        await SqliteDatabase.open(tmp_path / "v.db", want_vectors=True)

    message = str(raised.value)
    assert "pip install sqlite-vec" in message and "unset it" in message
    assert driver.driver_name() in message
    db = await SqliteDatabase.open(tmp_path / "v.db")
    try:
        assert db.capabilities.fts5 is None
        assert db.capabilities.vectors is not None and "sqlite-vec" in db.capabilities.vectors
        assert await db.scalar("SELECT count(*) FROM notes") == 0
    finally:
        await db.close()
