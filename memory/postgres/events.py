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
from memory.postgres.database import PostgresDatabase, utc
from memory.redaction import redact
from memory.storable import storable_json


class PostgresEventLog:
    """Stores and reads captured actions."""

    def __init__(
        self,
        db: PostgresDatabase,
        *,
        clock: Clock = utc_now,
        secrets: Iterable[str] = (),
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
                "INSERT INTO events (action, arguments_json, outcome, conversation_json, "
                "channel_scope, person, created_at, content_hash) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (
                    action, storable_json(clean, ensure_ascii=False), redact(outcome, self.secrets),
                    storable_json(dict(conversation)), channel_scope, person, self.clock(), digest,
                ),
            )  # fmt: skip
        return cursor.rowcount == 1

    async def fetch_since(self, start: datetime) -> list[CapturedEvent]:
        found = await self.db.rows(
            "SELECT * FROM events WHERE created_at >= %s ORDER BY action, id", (start,)
        )
        return [
            CapturedEvent(
                id=r["id"],
                action=r["action"],
                arguments=json.loads(r["arguments_json"]),
                outcome=r["outcome"],
                conversation=json.loads(r["conversation_json"]),
                channel_scope=r["channel_scope"],
                person=r["person"],
                created_at=utc(r["created_at"]) or self.clock(),
            )
            for r in found
        ]

    async def has_pattern(self, action: str, channel_scope: str) -> bool:
        found = await self.db.scalar(
            "SELECT 1 FROM patterns WHERE action = %s AND channel_scope = %s",
            (action, channel_scope),
        )
        return found is not None

    async def mark_pattern(self, action: str, channel_scope: str, proposal_id: int) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO patterns (action, channel_scope, proposal_id, created_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (action, channel_scope) DO UPDATE SET "
                "proposal_id = excluded.proposal_id, created_at = excluded.created_at",
                (action, channel_scope, proposal_id, self.clock()),
            )
