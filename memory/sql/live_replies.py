"""Replies being streamed: what each shows so far, so one that a crash cut short can be
finished with a notice at the next start."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memory.clock import Clock, utc_now
from memory.policy.storable import storable_json
from memory.sql.session import SqlDatabase
from memory.stores.live_replies import LiveReplyRow


class SqlLiveReplies:
    """The `live_replies` table: a row per reply while it streams, gone once finished."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def record(
        self, platform: str, conversation: Mapping[str, Any], message_id: str, shown: str
    ) -> None:
        """Note what the reply `message_id` shows now."""
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO live_replies (platform, conversation_json, message_id, shown, "
                "updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, message_id) "
                "DO UPDATE SET shown = excluded.shown, updated_at = excluded.updated_at",
                (
                    platform,
                    storable_json(dict(conversation), ensure_ascii=False),
                    message_id,
                    shown,
                    self.db.dialect.time(self.clock()),
                ),
            )

    async def done(self, platform: str, message_id: str) -> None:
        """The reply was finished (or mended): forget it."""
        async with self.db.transaction() as sql:
            await sql.run(
                "DELETE FROM live_replies WHERE platform = ? AND message_id = ?",
                (platform, message_id),
            )

    async def fetch_unfinished(self, platform: str) -> list[LiveReplyRow]:
        """Replies of `platform` a crash or a lost connection left unfinished, oldest first."""
        async with self.db.reading() as sql:
            found = await sql.rows(
                "SELECT id, platform, conversation_json, message_id, shown FROM live_replies "
                "WHERE platform = ? ORDER BY id",
                (platform,),
            )
        return [
            LiveReplyRow(
                row["id"],
                row["platform"],
                json.loads(row["conversation_json"]),
                row["message_id"],
                row["shown"],
            )
            for row in found
        ]
