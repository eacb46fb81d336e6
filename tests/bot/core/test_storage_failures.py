"""The store failing in the middle of a turn: an answer already computed is posted even
when only recording it fails (and the log says so), also while the database cannot
confirm the conversation's claim; a turn the store stops is answered in lorebot's words,
never with the driver's text. On SQLite a write lock held by another program, on
PostgreSQL a table lock held past the lock timeout."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from bot.core.replies import STORAGE_FAILED_REPLY
from memory.sqlite.driver import sqlite_module
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.polling import until

pytestmark = pytest.mark.usefixtures("on_each_engine")
NOT_KEPT = "without keeping the turn in its history"


@contextlib.asynccontextmanager
async def _tables_locked(url: str, *tables: str) -> AsyncIterator[None]:
    """Another program holds `tables` of the PostgreSQL database locked while the block runs."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            await conn.rollback()


async def _start(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, url: str) -> Harness:
    # Each statement waits at most 0.3 s for a lock, so a held one fails it soon.
    url = f"{url}?options=-c%20lock_timeout%3D300"
    return await start_harness(tmp_path, fake_ollama, clock, database={"url": url})


async def _answer_while(
    h: Harness, fake_ollama: FakeOllama, locked: contextlib.AbstractAsyncContextManager[None]
) -> None:
    """Ask, and let the model answer once the store is locked by `locked`."""
    fake_ollama.hold_chats()
    fake_ollama.reply("The computed answer.")
    await h.bot.dispatcher.submit(h.adapter.message("what is the answer?"))
    await fake_ollama.wait_for_requests(1)  # read what it needed; now waits on the model
    async with locked:
        fake_ollama.release_chats()
        await until(lambda: h.adapter.replies)
    await h.bot.dispatcher.wait_idle()  # the event is finished once the store is back


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
async def test_an_answer_is_posted_when_recording_it_fails_on_postgresql(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    database_at: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = await _start(tmp_path, fake_ollama, clock, database_at)
    try:
        await _answer_while(h, fake_ollama, _tables_locked(database_at, "messages"))
        assert h.adapter.replies == ["The computed answer."]
        assert NOT_KEPT in caplog.text
    finally:
        await h.bot.stop()


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
async def test_an_answer_is_posted_while_sqlite_takes_no_writes(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, database={"busy_timeout_ms": 50})
    # The same SQLite library as lorebot's: POSIX locks of two copies in one process
    # would not see each other.
    holder = sqlite_module().connect(h.bot.settings.database.path, isolation_level=None)

    @contextlib.asynccontextmanager
    async def write_locked() -> AsyncIterator[None]:
        holder.execute("BEGIN IMMEDIATE")  # a long import holding the write lock
        try:
            yield
        finally:
            holder.execute("ROLLBACK")

    try:
        # Neither the record nor the claim's check can be written: the lease begun with
        # the turn is still whole, so the answer goes out.
        await _answer_while(h, fake_ollama, write_locked())
        assert h.adapter.replies == ["The computed answer."]
        assert NOT_KEPT in caplog.text
    finally:
        holder.close()
        await h.bot.stop()


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
async def test_a_turn_the_store_stops_gets_the_storage_apology_not_the_drivers_text(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    database_at: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = await _start(tmp_path, fake_ollama, clock, database_at)
    try:
        async with _tables_locked(database_at, "messages"):  # the turn cannot read history
            await h.say("what is the answer?")
        assert h.adapter.replies == [STORAGE_FAILED_REPLY]
        assert "lock_timeout" in caplog.text  # the operator is told what failed
        fake_ollama.reply("Hello!")
        await h.say("hello again")
        assert h.adapter.replies[-1] == "Hello!"
    finally:
        await h.bot.stop()
