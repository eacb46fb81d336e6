"""Writing many rows fast from asyncio: work queued on aiosqlite's writer thread in order,
statements sized to SQLite's limit on bound values, and quick GIL hand-offs while a
reading thread competes with the writer (imports of notes and history)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import aiosqlite

from memory.sqlite import driver

_SQLITE_LIMIT_VARIABLE_NUMBER = 9
# How long the writer's thread may wait for the GIL while the reader runs Python: it takes
# the GIL back after each SQLite call, and at Python's default of 5 ms the few calls of a
# batch could wait for it longer than a writer-bound import can spare.
_IMPORT_SWITCH_INTERVAL_S = 0.002
_IMPORT_CACHE_KIB = 64 * 1024


@contextlib.contextmanager
def quick_gil_handoffs() -> Iterator[None]:
    """Let a thread waiting for the GIL have it sooner, for the duration of an import."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, _IMPORT_SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


@contextlib.asynccontextmanager
async def import_page_cache(conn: aiosqlite.Connection) -> AsyncIterator[None]:
    """A larger page cache while an import writes: the indexes of a large import outgrow
    SQLite's default 2 MiB, and each page evicted mid-transaction is written to the WAL
    again when it changes next."""
    async with conn.execute("PRAGMA cache_size") as cursor:
        row = await cursor.fetchone()
    await conn.execute(f"PRAGMA cache_size = -{_IMPORT_CACHE_KIB}")
    try:
        yield
    finally:
        await conn.execute(f"PRAGMA cache_size = {int(row[0]) if row else -2000}")


def rows_per_statement(raw: Any, columns: int) -> int:
    """How many rows of `columns` values one statement on the raw connection `raw` can
    bind: SQLite's limit on variables is 32766 since 3.32 unless the build or the
    connection lowered it, 999 before."""
    getlimit = getattr(raw, "getlimit", None)
    if getlimit is not None:
        limit = int(getlimit(_SQLITE_LIMIT_VARIABLE_NUMBER))
    else:
        limit = 32766 if driver.sqlite_module().sqlite_version_info >= (3, 32, 0) else 999
    return max(1, limit // columns)


def on_writer_thread(
    conn: aiosqlite.Connection, work: Callable[[Any], None]
) -> asyncio.Future[None]:
    """Queue `work` to run with the raw connection on aiosqlite's thread, after the calls
    queued before it, as one call: a statement awaited one by one from here would wait for
    the event loop, which an import's reader holds between its pauses."""
    return asyncio.ensure_future(driver.in_thread(conn, work))
