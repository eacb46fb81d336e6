"""Captured write actions (L1): one row per distinct action, secrets redacted.

The content hash covers the action and its redacted arguments, so repeating the same
action does not store it twice. Pattern extraction (L2) reads them grouped by action.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from memory.clock import Clock, utc_now
from memory.events import CapturedEvent, redacted_arguments
from memory.redaction import redact
from memory.sqlite.database import SqliteDatabase, from_db_time, to_db_time
from memory.storable import storable_json


class SqliteEventLog:
    """Stores and reads captured actions."""

    def __init__(
        self, db: SqliteDatabase, *, clock: Clock = utc_now, secrets: Iterable[str] = ()
    ) -> None:
        self.db = db
        self.clock = clock
        self.secrets = tuple(secrets)  # configured secret values, never stored

    async def capture(
        self,
        action: str,
        arguments: Mapping[str, Any],
        *,
        outcome: str,
        conversation: Mapping[str, Any],
        channel_scope: str | None,
        person: str,
    ) -> bool:
        """Store one successful action; False when the same action was already stored."""
        clean, digest = redacted_arguments(action, arguments, self.secrets)
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT OR IGNORE INTO events (action, arguments_json, outcome, "
                "conversation_json, channel_scope, person, created_at, content_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    action, storable_json(clean, ensure_ascii=False), redact(outcome, self.secrets),
                    storable_json(dict(conversation)), channel_scope, person,
                    to_db_time(self.clock()), digest,
                ),
            )  # fmt: skip
        return cursor.rowcount == 1

    async def fetch_since(self, start: datetime) -> list[CapturedEvent]:
        async with self.db.conn.execute(
            "SELECT * FROM events WHERE created_at >= ? ORDER BY action, id", (to_db_time(start),)
        ) as cursor:
            rows = await cursor.fetchall()
        return [
            CapturedEvent(
                id=r["id"],
                action=r["action"],
                arguments=json.loads(r["arguments_json"]),
                outcome=r["outcome"],
                conversation=json.loads(r["conversation_json"]),
                channel_scope=r["channel_scope"],
                person=r["person"],
                created_at=from_db_time(r["created_at"]) or self.clock(),
            )
            for r in rows
        ]

    async def has_pattern(self, action: str, channel_scope: str) -> bool:
        async with self.db.conn.execute(
            "SELECT 1 FROM patterns WHERE action = ? AND channel_scope = ?",
            (action, channel_scope),
        ) as cursor:
            return await cursor.fetchone() is not None

    async def mark_pattern(self, action: str, channel_scope: str, proposal_id: int) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO patterns (action, channel_scope, proposal_id, created_at) "
                "VALUES (?, ?, ?, ?)",
                (action, channel_scope, proposal_id, to_db_time(self.clock())),
            )
