"""A database written before lorebot redacted messages: opening it with this lorebot
redacts the credentials in its stored messages and summaries, and message search no
longer finds them, in the message or in its neighbours' rows."""

from __future__ import annotations

from pathlib import Path

from memory.policy.visibility import explicit
from memory.sql.conversations import SqlConversationLog
from memory.sqlite import driver
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch, index_statements
from memory.sqlite.migrations import MIGRATIONS
from memory.sqlite.session import SqliteSession
from memory.types import Scope

TOKEN = "xoxb-1234567890-0987654321-abcdefghijklmnopqrstuvwx"
CHANNEL = "channel:slack/C1"
LINES = [
    "the deploy bot needs a token",
    f"use {TOKEN} for the deploy bot",
    "thanks, deploying now",
]


async def _older_database(path: Path) -> None:
    """A database of schema 11 holding messages and a summary stored as they were written."""
    conn = driver.connect(path)
    await conn
    try:
        for script in MIGRATIONS[:11]:
            assert isinstance(script, str)
            await conn.executescript(script)
        await conn.execute("PRAGMA user_version = 11")
        await conn.executemany(
            "INSERT INTO messages (conversation, role, content, author_name, scope, "
            "created_at) VALUES ('slack/C1/', 'user', ?, 'Priya', ?, '2026-01-05T10:00:00Z')",
            [(line, CHANNEL) for line in LINES],
        )
        await SqliteSession(conn).batch(index_statements("slack/C1/", CHANNEL, after=0))
        await conn.execute(
            "INSERT INTO summaries (conversation, up_to_message_id, content, created_at) "
            "VALUES ('slack/C1/', 0, ?, '2026-01-05T10:00:00Z')",
            (f"Priya shared the deploy bot's token {TOKEN}.",),
        )
        await conn.commit()
    finally:
        await conn.close()


async def _found(log: SqlConversationLog, query: str) -> list[str]:
    hits = await log.search(query, explicit((Scope.parse(CHANNEL),)), k=10)
    return [hit.content for hit in hits]


async def test_opening_an_older_database_redacts_its_stored_credentials(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    await _older_database(path)
    db = await SqliteDatabase.open(path)
    try:
        log = SqlConversationLog(db, SqliteMessageSearch(db))
        history = await log.fetch_history("slack/C1/")
        assert [e.content for e in history.entries] == [
            LINES[0],
            "use [REDACTED] for the deploy bot",
            LINES[2],
        ]
        assert history.summary == "Priya shared the deploy bot's token [REDACTED]."
        assert await _found(log, "0987654321") == []
        assert await _found(log, "abcdefghijklmnopqrstuvwx") == []
        # The neighbours still find each other, from the redacted text.
        assert "use [REDACTED] for the deploy bot" in await _found(log, "deploying")
        async with db.conn.execute("SELECT * FROM messages_fts") as cursor:
            rows = [" ".join(map(str, row)) for row in await cursor.fetchall()]
        assert len(rows) == 3 and not any("0987654321" in row for row in rows)
    finally:
        await db.close()


async def test_a_database_with_nothing_to_redact_keeps_its_index(tmp_path: Path) -> None:
    path = tmp_path / "clean.db"
    await _older_database(path)
    conn = driver.connect(path)
    await conn
    await conn.execute("DELETE FROM summaries")
    await conn.execute("DELETE FROM messages WHERE content LIKE '%xoxb%'")
    await conn.commit()
    await conn.close()
    db = await SqliteDatabase.open(path)
    try:
        assert await db.scalar("PRAGMA user_version") > 11
        found = await _found(SqlConversationLog(db, SqliteMessageSearch(db)), "deploy")
        assert sorted(found) == sorted([LINES[0], LINES[2]])
    finally:
        await db.close()
