"""Captured write actions (L1): one row per distinct action, secrets redacted.

The content hash covers the action and its redacted arguments, so repeating the same
action does not store it twice. Pattern extraction (L2) reads them grouped by action.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.clock import Clock, utc_now
from memory.policy.redaction import redact
from memory.policy.storable import storable_json
from memory.sql.session import SqlDatabase, Statement
from memory.stores.events import CapturedEvent, redacted_arguments


@dataclass(frozen=True, slots=True)
class SqlEventLog:
    """Stores and reads captured actions."""

    db: SqlDatabase
    clock: Clock = field(default=utc_now, kw_only=True)
    secrets: tuple[str, ...] = field(default=(), kw_only=True)  # configured values, never stored

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
        [inserted] = await self.db.transact(
            [
                Statement(
                    "INSERT INTO events (action, arguments_json, outcome, conversation_json, "
                    "channel_scope, person, created_at, content_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        action,
                        storable_json(clean, ensure_ascii=False),
                        redact(outcome, self.secrets),
                        storable_json(dict(conversation)),
                        channel_scope,
                        person,
                        self.db.dialect.time(self.clock()),
                        digest,
                    ),
                )
            ]
        )
        return inserted.changed == 1

    async def fetch_since(self, start: datetime) -> list[CapturedEvent]:
        read_time = self.db.dialect.read_time
        async with self.db.reading() as sql:
            found = await sql.rows(
                "SELECT * FROM events WHERE created_at >= ? ORDER BY action, id",
                (self.db.dialect.time(start),),
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
                created_at=read_time(r["created_at"]) or self.clock(),
            )
            for r in found
        ]

    async def has_pattern(self, action: str, channel_scope: str) -> bool:
        async with self.db.reading() as sql:
            found = await sql.row(
                "SELECT 1 AS found FROM patterns WHERE action = ? AND channel_scope = ?",
                (action, channel_scope),
            )
        return found is not None

    async def mark_pattern(self, action: str, channel_scope: str, proposal_id: int) -> None:
        await self.db.transact(
            [
                Statement(
                    "INSERT INTO patterns (action, channel_scope, proposal_id, created_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (action, channel_scope) DO UPDATE SET "
                    "proposal_id = excluded.proposal_id, created_at = excluded.created_at",
                    (action, channel_scope, proposal_id, self.db.dialect.time(self.clock())),
                )
            ]
        )
