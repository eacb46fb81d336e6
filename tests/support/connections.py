"""Which database connections a test opened and where, so that the suite can fail a test
that leaves one open (its worker thread would stop the process from exiting)."""

from __future__ import annotations

import asyncio
import sys
import sysconfig
import time
import traceback
from collections.abc import Generator
from contextlib import suppress
from pathlib import Path
from typing import Any

import aiosqlite

from tests.support.paths import ROOT

# How long the worker thread of a closed connection may take to end after `close()`.
CLOSING_GRACE_S = 1.0

Opened = tuple[aiosqlite.Connection, traceback.StackSummary]
# The aiosqlite connections opened during the running test, and where each was opened.
opened: list[Opened] = []
_real_await = aiosqlite.Connection.__await__
_LIBRARIES = ("<", *{f"{sysconfig.get_path(p)}/" for p in ("stdlib", "purelib", "scripts")})


def recording_await(conn: aiosqlite.Connection) -> Generator[Any, None, aiosqlite.Connection]:
    """`await conn` (and `async with conn`) starts the worker thread: note where it was
    called from; source lines are read only when the place is shown."""
    opening = _real_await(conn)  # starts the thread
    stack = traceback.walk_stack(sys._getframe(1))
    opened.append((conn, traceback.StackSummary.extract(stack, lookup_lines=False)))
    return opening


def still_open() -> list[Opened]:
    """The connections opened during this test whose worker thread (aiosqlite 0.22:
    `Connection._thread`) is still alive; one that is closing gets a moment to end."""
    deadline = time.monotonic() + CLOSING_GRACE_S
    for conn, _ in opened:
        conn._thread.join(max(0.0, deadline - time.monotonic()))
    return [(conn, where) for conn, where in opened if conn._thread.is_alive()]


def _where(stack: traceback.StackSummary) -> str:
    """The frames of `stack` outside Python's and the installed packages' own code (those
    of lorebot and its tests), outermost first."""
    lines = []
    for frame in reversed(stack):
        if frame.filename.startswith(_LIBRARIES):
            continue
        path = Path(frame.filename)
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        lines.append(f"    {shown}:{frame.lineno} in {frame.name}\n")
    return "".join(lines)


def describe(left: list[Opened]) -> str:
    """What `still_open` found, and where each connection was opened."""
    places = "".join(
        f"  connection {n}, opened at:\n{_where(where)}" for n, (_, where) in enumerate(left, 1)
    )
    return (
        f"{len(left)} database connection(s) opened during this test are still open: close "
        f"them (each keeps a thread that stops the process from exiting)\n{places}"
    )


def stop_left(left: list[Opened]) -> None:
    """End the worker threads of connections a test left open, so the run still exits."""

    async def stop(conn: aiosqlite.Connection) -> None:
        stopped = conn.stop()  # closes the sqlite3 connection, then ends the thread
        if stopped is not None:
            await stopped

    loop = asyncio.new_event_loop()
    try:
        for conn, _ in left:
            with suppress(Exception):
                loop.run_until_complete(asyncio.wait_for(stop(conn), 5))
    finally:
        loop.close()
