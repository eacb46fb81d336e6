"""A running bot on PostgreSQL when the database misbehaves: the server restarts under it
(every pooled connection cut), a lock held elsewhere outlasts the statement's lock timeout
or statement timeout, the server is down for a moment. A person gets the storage apology,
never a traceback; nothing stored is lost; the next message is answered once the server
is back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.core.replies import UNAVAILABLE_REPLY
from memory import Scope
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import start_harness
from tests.support.postgres import PostgresServer

pytestmark = [
    pytest.mark.usefixtures("on_each_engine"),
    pytest.mark.parametrize("engine", ["postgresql"], indirect=True),
]
CHANNEL = Scope.parse("channel:test/C1")


async def test_a_server_restart_under_the_bot_loses_nothing_and_the_next_message_is_answered(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, postgres_server: PostgresServer
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        h.script_title("standup", "standup at 10")
        await h.say("remember that standup is at 10")
        await h.react(h.adapter.cards[-1], "✅")
        postgres_server.restart()  # every connection of the pool is cut
        fake_ollama.reply("Standup is at 10.")
        await h.say("when is standup?")
        assert h.adapter.replies[-1] == "Standup is at 10."
        assert await h.bot.stores.notes.fetch(CHANNEL, "standup") is not None
    finally:
        await h.bot.stop()


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("lock_timeout", "past the lock_timeout"),
        ("statement_timeout", "past the statement_timeout"),
    ],
)
async def test_a_lock_held_past_a_timeout_gets_the_apology_the_log_says_why_then_it_answers(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    database_at: str,
    caplog: pytest.LogCaptureFixture,
    setting: str,
    said: str,
) -> None:
    url = f"{database_at}?options=-c%20{setting}%3D300"
    h = await start_harness(tmp_path, fake_ollama, clock, database={"url": url})
    holder = await asyncio.create_subprocess_exec(
        "psql",
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        database_at,
        "-c",
        "BEGIN; LOCK TABLE seen_events, messages, notes, proposals IN ACCESS EXCLUSIVE MODE; "
        "SELECT pg_sleep(3); COMMIT;",
        stdout=asyncio.subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(0.5)  # the lock is taken: lorebot's statement waits, then is cut
        await h.say("hello there")
        assert h.adapter.replies == [UNAVAILABLE_REPLY]
        assert said in caplog.text
        assert await holder.wait() == 0

        fake_ollama.reply("Hello!")
        await h.say("hello again")
        assert h.adapter.replies[-1] == "Hello!"
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
        await h.bot.stop()


async def test_a_server_that_is_down_for_a_moment_gets_the_apology_then_answers(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, postgres_server: PostgresServer
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        postgres_server.stop()
        try:
            await h.say("hello there")
        finally:
            postgres_server.start_again()
        assert h.adapter.replies == [UNAVAILABLE_REPLY]
        fake_ollama.reply("Hello!")
        await h.say("hello again")
        assert h.adapter.replies[-1] == "Hello!"
    finally:
        await h.bot.stop()
