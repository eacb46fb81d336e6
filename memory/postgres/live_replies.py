"""Replies being streamed: what each shows so far, so one that a crash cut short can be
finished with a notice at the next start."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memory.clock import Clock, utc_now
from memory.live_replies import LiveReplyRow
from memory.postgres.database import PostgresDatabase
from memory.storable import storable_json


class PostgresLiveReplies:
    """The `live_replies` table: a row per reply while it streams, gone once finished."""

    def __init__(self, db: PostgresDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def record(
        self,
        platform: str,
        conversation: Mapping[str, Any],
        message_id: str,
        shown: str,
    ) -> None:
        """Note what the reply `message_id` shows now."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO live_replies (platform, conversation_json, message_id, shown, "
                "updated_at) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (platform, message_id) "
                "DO UPDATE SET shown = excluded.shown, updated_at = excluded.updated_at",
                (
                    platform,
                    storable_json(dict(conversation), ensure_ascii=False),
                    message_id,
                    shown,
                    self.clock(),
                ),
            )

    async def done(self, platform: str, message_id: str) -> None:
        """The reply was finished (or mended): forget it."""
        async with self.db.write() as conn:
            await conn.execute(
                "DELETE FROM live_replies WHERE platform = %s AND message_id = %s",
                (platform, message_id),
            )

    async def fetch_unfinished(self, platform: str) -> list[LiveReplyRow]:
        """Replies of `platform` a crash or a lost connection left unfinished, oldest first."""
        found = await self.db.rows(
            "SELECT id, platform, conversation_json, message_id, shown FROM live_replies "
            "WHERE platform = %s ORDER BY id",
            (platform,),
        )
        return [
            LiveReplyRow(
                r["id"], r["platform"], json.loads(r["conversation_json"]), r["message_id"],
                r["shown"],
            )
            for r in found
        ]  # fmt: skip
