"""Proposals: changes waiting for a person's decision, kept in PostgreSQL so a restart loses none,
and shared by every replica.

A decision is claimed and applied in one transaction, so it happens exactly once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from memory.errors import Conflict, InvalidInput, NotFound
from memory.postgres.database import Connection, connection_of, utc
from memory.postgres.notes import PostgresNoteStore
from memory.proposals import Proposal, apply_proposal, proposal_from_row
from memory.storable import storable_json

_log = logging.getLogger(__name__)


class PostgresProposalStore:
    """Creation, lookup, decision and expiry of proposals."""

    def __init__(self, notes: PostgresNoteStore) -> None:
        self.notes = notes
        self.db = notes.db
        self.clock = notes.clock

    async def create(
        self,
        kind: str,
        *,
        requester: str,
        platform: str,
        conversation: Mapping[str, Any],
        payload: Mapping[str, Any],
        ttl: timedelta,
    ) -> Proposal:
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO proposals (kind, requester, platform, conversation_json, "
                "payload_json, created_at, expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "RETURNING id",
                (
                    kind, requester, platform, storable_json(dict(conversation)),
                    storable_json(dict(payload), ensure_ascii=False), now,
                    now + ttl,
                ),
            )  # fmt: skip
            row = await cursor.fetchone()
        assert row is not None
        return await self.fetch(row["id"])

    async def attach_card(self, proposal_id: int, channel_id: str, card_message_id: str) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE proposals SET card_channel_id = %s, card_message_id = %s WHERE id = %s",
                (channel_id, card_message_id, proposal_id),
            )

    async def fetch(self, proposal_id: int) -> Proposal:
        found = await self._select("WHERE id = %s", (proposal_id,))
        if not found:
            raise NotFound(f"there is no proposal {proposal_id}")
        return found[0]

    async def fetch_by_card(
        self, platform: str, channel_id: str, card_message_id: str
    ) -> Proposal | None:
        """The proposal whose card is message `card_message_id` in `channel_id` (a Slack
        ts is unique only within its channel)."""
        found = await self._select(
            "WHERE platform = %s AND card_channel_id = %s AND card_message_id = %s",
            (platform, channel_id, card_message_id),
        )
        return found[0] if found else None

    async def fetch_recent(self, status: str | None = None, limit: int = 100) -> list[Proposal]:
        if status is None:
            return await self._select("ORDER BY id DESC LIMIT %s", (limit,))
        return await self._select("WHERE status = %s ORDER BY id DESC LIMIT %s", (status, limit))

    async def fetch_pending_in(self, platform: str, channel_id: str) -> list[Proposal]:
        """Open proposals whose card is in one channel."""
        return await self._select(
            "WHERE status = 'pending' AND platform = %s "
            "AND conversation_json::jsonb ->> 'channel_id' = %s ORDER BY id",
            (platform, channel_id),
        )

    async def decide(self, proposal_id: int, *, approve: bool, decided_by: str) -> Proposal:
        """Approve or reject a pending proposal exactly once; note changes are applied in
        the same transaction. Raises `Conflict` when it is no longer pending or expired."""
        now = self.clock()
        try:
            async with self.db.transaction() as tx:
                conn = connection_of(tx)
                proposal = await self._claim(conn, proposal_id, approve, decided_by, now)
                if approve:
                    outcome = await apply_proposal(self.notes, tx, proposal)
                    await conn.execute(
                        "UPDATE proposals SET outcome = %s WHERE id = %s", (outcome, proposal.id)
                    )
        except InvalidInput as exc:
            if isinstance(exc, Conflict):
                raise
            # The change no longer applies (e.g. the note was already forgotten).
            await self.refuse(proposal_id, str(exc), decided_by=decided_by)
        return await self.fetch(proposal_id)

    async def refuse(self, proposal_id: int, reason: str, *, decided_by: str) -> Proposal:
        """Close a pending proposal as failed without applying it, saying why; raises
        `Conflict` when it is no longer pending or expired."""
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE proposals SET status = 'failed', outcome = %s, decided_by = %s, "
                "decided_at = %s WHERE id = %s AND status = 'pending' AND expires_at > %s",
                (reason, decided_by, now, proposal_id, now),
            )
            if cursor.rowcount != 1:
                await self._claim(conn, proposal_id, False, decided_by, now)  # raises why
        return await self.fetch(proposal_id)

    async def claim_follow_up(self, proposal_id: int) -> bool:
        """Claim the follow-up of a decided proposal (its card edit and the resumed turn);
        True for exactly one caller, so a card is finished once across processes."""
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE proposals SET followed_up_at = %s WHERE id = %s "
                "AND status != 'pending' AND followed_up_at IS NULL",
                (self.clock(), proposal_id),
            )
        return cursor.rowcount == 1

    async def fetch_to_follow_up(self, platforms: Sequence[str]) -> list[Proposal]:
        """Decided proposals on these platforms whose card and turn are not finished yet,
        e.g. decided with `lorebot proposals approve` while the daemon runs."""
        if not platforms:
            return []
        return await self._select(
            "WHERE followed_up_at IS NULL AND status != 'pending' AND platform = ANY(%s) "
            "ORDER BY id",
            (list(platforms),),
        )

    async def mark(self, proposal_id: int, outcome: str, *, failed: bool = False) -> Proposal:
        """Record what happened when a decided proposal was carried out outside SQL."""
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE proposals SET outcome = %s, status = CASE WHEN %s THEN 'failed' "
                "ELSE status END WHERE id = %s",
                (outcome, failed, proposal_id),
            )
        return await self.fetch(proposal_id)

    async def expire_due(self) -> list[Proposal]:
        """Mark pending proposals past their expiry as expired and return them."""
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE proposals SET status = 'expired', decided_at = %s "
                "WHERE status = 'pending' AND expires_at <= %s RETURNING id",
                (now, now),
            )
            ids = sorted(row["id"] for row in await cursor.fetchall())
        return [await self.fetch(i) for i in ids]

    async def _claim(
        self, conn: Connection, proposal_id: int, approve: bool, who: str, now: datetime
    ) -> Proposal:
        status = "approved" if approve else "rejected"
        cursor = await conn.execute(
            "UPDATE proposals SET status = %s, decided_by = %s, decided_at = %s "
            "WHERE id = %s AND status = 'pending' AND expires_at > %s",
            (status, who, now, proposal_id, now),
        )
        if cursor.rowcount == 1:
            return (await self._select("WHERE id = %s", (proposal_id,), conn))[0]
        current = await self._select("WHERE id = %s", (proposal_id,), conn)
        if not current:
            raise NotFound(f"there is no proposal {proposal_id}")
        if current[0].status == "pending":
            raise Conflict(f"proposal {proposal_id} expired at {current[0].expires_at:%H:%M}Z")
        raise Conflict(f"proposal {proposal_id} was already {current[0].status}")

    async def _select(
        self,
        where: str,
        params: tuple[object, ...],
        conn: Connection | None = None,
    ) -> list[Proposal]:
        sql = f"SELECT * FROM proposals {where}"
        if conn is None:
            found = await self.db.rows(sql, params)
        else:
            found = await (await conn.execute(sql, params)).fetchall()
        return [proposal_from_row(row, utc) for row in found]
