"""Two processes on one database: a one-shot command (`lorebot proposals approve`) that
indexes older messages at open while the daemon logs, and indexes, a new message. The
command must not index a message twice (FTS5 refuses the second row as a constraint
failure, which made `proposals approve` fail with an unexpected error)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from memory.sql.conversations import SqlConversationLog
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.stores.conversations import LogEntry

CHANNEL = "channel:slack/C1"


async def test_indexing_older_messages_beside_a_daemon_that_logs_indexes_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bot.db"
    daemon_db = await SqliteDatabase.open(path)
    shell_db = await SqliteDatabase.open(path)
    try:
        daemon, shell = (
            SqlConversationLog(daemon_db, SqliteMessageSearch(daemon_db)),
            SqlConversationLog(shell_db, SqliteMessageSearch(shell_db)),
        )
        # A message of an older lorebot, stored without its index row.
        async with daemon_db.write() as conn:
            await conn.execute(
                "INSERT INTO messages (conversation, role, content, scope, created_at) "
                "VALUES ('slack/C1/', 'user', 'the proxy is host-7', ?, "
                "'2026-11-02T09:00:00.000000Z')",
                (CHANNEL,),
            )
        real = shell_db.write

        @asynccontextmanager
        async def after_the_daemon_logged() -> AsyncIterator[Any]:
            # The daemon logs a reply between the command's first look and its write.
            await daemon.append("slack/C1/", [LogEntry("assistant", "noted")], scope=CHANNEL)
            async with real() as conn:
                yield conn

        monkeypatch.setattr(shell_db, "write", after_the_daemon_logged)
        await shell.index_older_messages()
        async with shell_db.conn.execute("SELECT count(*) FROM messages_fts") as cursor:
            row = await cursor.fetchone()
        assert row is not None and row[0] == 2
    finally:
        await shell_db.close()
        await daemon_db.close()
