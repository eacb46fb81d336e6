"""Proposals: changes waiting for a person's decision, kept in SQLite so a restart loses none.

A decision is claimed and applied in one transaction, so it happens exactly once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import aiosqlite

from memory.errors import Conflict, InvalidInput, NotFound
from memory.proposals import Proposal, apply_proposal, proposal_from_row
from memory.sqlite.database import connection_of, from_db_time, to_db_time
from memory.sqlite.notes import SqliteNoteStore
from memory.storable import storable_json

_log = logging.getLogger(__name__)


class SqliteProposalStore:
    """Creation, lookup, decision and expiry of proposals."""

    def __init__(self, notes: SqliteNoteStore) -> None:
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
                "payload_json, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    kind, requester, platform, storable_json(dict(conversation)),
                    storable_json(dict(payload), ensure_ascii=False), to_db_time(now),
                    to_db_time(now + ttl),
                ),
            )  # fmt: skip
        assert cursor.lastrowid is not None
        return await self.fetch(cursor.lastrowid)

    async def attach_card(self, proposal_id: int, channel_id: str, card_message_id: str) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE proposals SET card_channel_id = ?, card_message_id = ? WHERE id = ?",
                (channel_id, card_message_id, proposal_id),
            )

    async def fetch(self, proposal_id: int) -> Proposal:
        found = await self._select("WHERE id = ?", (proposal_id,))
        if not found:
            raise NotFound(f"there is no proposal {proposal_id}")
        return found[0]

    async def fetch_by_card(
        self, platform: str, channel_id: str, card_message_id: str
    ) -> Proposal | None:
        """The proposal whose card is message `card_message_id` in `channel_id` (a Slack
        ts is unique only within its channel)."""
        found = await self._select(
            "WHERE platform = ? AND card_channel_id = ? AND card_message_id = ?",
            (platform, channel_id, card_message_id),
        )
        return found[0] if found else None

    async def fetch_recent(self, status: str | None = None, limit: int = 100) -> list[Proposal]:
        if status is None:
            return await self._select("ORDER BY id DESC LIMIT ?", (limit,))
        return await self._select("WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit))

    async def fetch_pending_in(self, platform: str, channel_id: str) -> list[Proposal]:
        """Open proposals whose card is in one channel."""
        return await self._select(
            "WHERE status = 'pending' AND platform = ? "
            "AND json_extract(conversation_json, '$.channel_id') = ? ORDER BY id",
            (platform, channel_id),
        )

    async def decide(self, proposal_id: int, *, approve: bool, decided_by: str) -> Proposal:
        """Approve or reject a pending proposal exactly once; note changes are applied in
        the same transaction. Raises `Conflict` when it is no longer pending or expired."""
        now = to_db_time(self.clock())
        try:
            async with self.db.transaction() as tx:
                conn = connection_of(tx)
                proposal = await self._claim(conn, proposal_id, approve, decided_by, now)
                if approve:
                    outcome = await apply_proposal(self.notes, tx, proposal)
                    await conn.execute(
                        "UPDATE proposals SET outcome = ? WHERE id = ?", (outcome, proposal.id)
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
        now = to_db_time(self.clock())
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE proposals SET status = 'failed', outcome = ?, decided_by = ?, "
                "decided_at = ? WHERE id = ? AND status = 'pending' AND expires_at > ?",
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
                "UPDATE proposals SET followed_up_at = ? WHERE id = ? "
                "AND status != 'pending' AND followed_up_at IS NULL",
                (to_db_time(self.clock()), proposal_id),
            )
        return cursor.rowcount == 1

    async def fetch_to_follow_up(self, platforms: Sequence[str]) -> list[Proposal]:
        """Decided proposals on these platforms whose card and turn are not finished yet,
        e.g. decided with `lorebot proposals approve` while the daemon runs."""
        if not platforms:
            return []
        marks = ", ".join("?" for _ in platforms)
        return await self._select(
            f"WHERE followed_up_at IS NULL AND status != 'pending' AND platform IN ({marks}) "
            "ORDER BY id",
            tuple(platforms),
        )

    async def mark(self, proposal_id: int, outcome: str, *, failed: bool = False) -> Proposal:
        """Record what happened when a decided proposal was carried out outside SQL."""
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE proposals SET outcome = ?, status = CASE WHEN ? THEN 'failed' "
                "ELSE status END WHERE id = ?",
                (outcome, failed, proposal_id),
            )
        return await self.fetch(proposal_id)

    async def expire_due(self) -> list[Proposal]:
        """Mark pending proposals past their expiry as expired and return them."""
        now = to_db_time(self.clock())
        async with self.db.write() as conn:
            async with conn.execute(
                "SELECT id FROM proposals WHERE status = 'pending' AND expires_at <= ?", (now,)
            ) as cursor:
                ids = [row[0] for row in await cursor.fetchall()]
            await conn.executemany(
                "UPDATE proposals SET status = 'expired', decided_at = ? WHERE id = ?",
                [(now, i) for i in ids],
            )
        return [await self.fetch(i) for i in ids]

    async def _claim(
        self, conn: aiosqlite.Connection, proposal_id: int, approve: bool, who: str, now: str
    ) -> Proposal:
        status = "approved" if approve else "rejected"
        cursor = await conn.execute(
            "UPDATE proposals SET status = ?, decided_by = ?, decided_at = ? "
            "WHERE id = ? AND status = 'pending' AND expires_at > ?",
            (status, who, now, proposal_id, now),
        )
        if cursor.rowcount == 1:
            return (await self._select("WHERE id = ?", (proposal_id,), conn))[0]
        current = await self._select("WHERE id = ?", (proposal_id,), conn)
        if not current:
            raise NotFound(f"there is no proposal {proposal_id}")
        if current[0].status == "pending":
            raise Conflict(f"proposal {proposal_id} expired at {current[0].expires_at:%H:%M}Z")
        raise Conflict(f"proposal {proposal_id} was already {current[0].status}")

    async def _select(
        self,
        where: str,
        params: tuple[object, ...],
        conn: aiosqlite.Connection | None = None,
    ) -> list[Proposal]:
        async with (conn or self.db.conn).execute(
            f"SELECT * FROM proposals {where}", params
        ) as cursor:
            return [proposal_from_row(row, from_db_time) for row in await cursor.fetchall()]
