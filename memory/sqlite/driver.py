"""The SQLite driver: one choice for the whole process, and a self-test of what it can do.

Vectors live in sqlite-vec, a loadable extension. The stdlib `sqlite3` is used when it can
load extensions; many Python builds cannot, and then `pysqlite3` (the `pysqlite3-binary`
wheel bundles a recent SQLite with FTS5 and extension loading) is used instead. Every
connection and every `except` in lorebot goes through this module, so both never mix.
"""

from __future__ import annotations

import functools
import importlib.util
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import aiosqlite

from memory.policy.storable import storable_text

T = TypeVar("T")


@functools.cache
def sqlite_module() -> ModuleType:
    """The stdlib `sqlite3` when it can load extensions, else `pysqlite3` when installed,
    else the stdlib anyway (full-text search works; vectors will not)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        return sqlite3
    module: ModuleType = dbapi2
    return module


_DRIVER = sqlite_module()
# Every text parameter of every statement goes in as every engine keeps text: a NUL, which
# PostgreSQL cannot hold, as U+FFFD (`memory.policy.storable`).
_DRIVER.register_adapter(str, storable_text)
# Exception classes of the chosen driver: catch these, never the stdlib's directly.
Error: type[Exception] = _DRIVER.Error
DatabaseError: type[Exception] = _DRIVER.DatabaseError
IntegrityError: type[Exception] = _DRIVER.IntegrityError
Row: Any = _DRIVER.Row


def driver_name() -> str:
    name = "pysqlite3" if _DRIVER is not sqlite3 else "sqlite3 (stdlib)"
    return f"{name} with SQLite {_DRIVER.sqlite_version}"


def _vec_extension() -> str | None:
    """Where sqlite-vec's loadable extension is (what `sqlite_vec.loadable_path()` gives),
    found without importing the package: its `__init__` imports numpy when installed,
    a third of a second that every command would pay."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(spec.submodule_search_locations[0]) / "vec0")


def load_vec(conn: Any) -> str | None:
    """Load sqlite-vec into a raw connection; None on success, else why it failed."""
    extension = _vec_extension()
    if extension is None:
        return "the sqlite-vec package is not installed (pip install sqlite-vec)"
    if not hasattr(conn, "enable_load_extension"):
        return (
            f"{driver_name()} cannot load extensions and pysqlite3 is not installed "
            "(pip install pysqlite3-binary)"
        )
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(extension)
        finally:
            conn.enable_load_extension(False)
    except (Error, AttributeError, OSError) as exc:
        return f"sqlite-vec failed to load into {driver_name()}: {exc}"
    return None


async def in_thread(conn: aiosqlite.Connection, function: Callable[[Any], T]) -> T:
    """Run `function(raw connection)` on the connection's own thread: several statements
    for one hop of the event loop. (aiosqlite has no public call for this; `_execute` is
    the one each of its own methods queues through, and tests/memory/sqlite/
    test_import_batches.py fails if that changes.)"""
    queue: Callable[..., Awaitable[T]] = conn._execute  # unannotated in aiosqlite
    return await queue(function, conn._conn)


class Connection(aiosqlite.Connection):
    """An aiosqlite connection through the chosen driver that remembers whether
    sqlite-vec loaded, and why not."""

    vec_problem: str | None = "not connected yet"


def connect(path: Path | str) -> Connection:
    """A connection (await it to open) in autocommit mode, rows as `Row`, with sqlite-vec
    loaded when it can be."""

    def connector() -> Any:
        raw = _DRIVER.connect(str(path), isolation_level=None, check_same_thread=False)
        raw.row_factory = Row
        conn.vec_problem = load_vec(raw)
        return raw

    conn = Connection(connector, iter_chunk_size=64)
    return conn


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a connection can do, as found by `self_test`."""

    fts5: str | None  # None when it works, else the problem
    vectors: str | None

    def explain(self, *, want_vectors: bool) -> str | None:
        """One message naming what is missing and how to fix it, or None when all is well."""
        problems = []
        if self.fts5 is not None:
            problems.append(f"FTS5 does not work ({self.fts5}); use a SQLite built with FTS5")
        if want_vectors and self.vectors is not None:
            problems.append(
                f"sqlite-vec does not work ({self.vectors}); it is needed because "
                "ollama.embed_model is set (unset it to search by words alone)"
            )
        if not problems:
            return None
        return f"the SQLite driver ({driver_name()}) cannot run lorebot: " + "; ".join(problems)


async def self_test(conn: Connection) -> Capabilities:
    """Try FTS5 and sqlite-vec on throwaway in-memory tables of `conn`."""
    fts5: str | None = None
    try:
        await conn.execute("CREATE VIRTUAL TABLE temp.selftest_fts USING fts5(body)")
        await conn.execute("DROP TABLE temp.selftest_fts")
    except Error as exc:
        fts5 = str(exc)
    vectors = conn.vec_problem
    if vectors is None:
        try:
            await conn.execute("SELECT vec_distance_cosine(vec_int8(X'7F00'), vec_int8(X'007F'))")
        except Error as exc:
            vectors = str(exc)
    return Capabilities(fts5, vectors)
