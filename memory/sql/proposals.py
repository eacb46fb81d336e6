"""Proposals: changes waiting for a person's decision, kept in the database so a restart
loses none, and shared by every replica of it.

A decision is claimed and applied in one transaction, so it happens exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from memory.clock import Clock
from memory.errors import Conflict, InvalidInput, NotFound
from memory.policy.storable import storable_json
from memory.sql.session import Params, Session, SqlDatabase, marks
from memory.stores.notes import NoteStore
from memory.stores.proposals import Proposal, apply_proposal, proposal_from_row


class SqlProposalStore:
    """Creation, lookup, decision and expiry of proposals."""

    def __init__(self, db: SqlDatabase, notes: NoteStore, *, clock: Clock) -> None:
        self.db = db
        self.notes = notes
        self.clock = clock
        self.time = db.dialect.time

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
        async with self.db.transaction() as sql:
            new_id = await sql.insert(
                "INSERT INTO proposals (kind, requester, platform, conversation_json, "
                "payload_json, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    requester,
                    platform,
                    storable_json(dict(conversation)),
                    storable_json(dict(payload), ensure_ascii=False),
                    self.time(now),
                    self.time(now + ttl),
                ),
            )
            return await self._one(sql, new_id)

    async def attach_card(self, proposal_id: int, channel_id: str, card_message_id: str) -> None:
        async with self.db.transaction() as sql:
            await sql.run(
                "UPDATE proposals SET card_channel_id = ?, card_message_id = ? WHERE id = ?",
                (channel_id, card_message_id, proposal_id),
            )

    async def fetch(self, proposal_id: int) -> Proposal:
        async with self.db.reading() as sql:
            return await self._one(sql, proposal_id)

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

    async def fetch_for(
        self, person: str | None, *, waiting: bool, limit: int = 100
    ) -> list[Proposal]:
        clauses: list[str] = [
            "status = 'pending' AND card_message_id IS NOT NULL"
            if waiting
            else "status <> 'pending'"
        ]
        params: list[object] = []
        if person is not None:
            clauses.append("requester = ?")
            params.append(person)
            if waiting:  # an action whose server lets admins alone decide it
                approvers = self.db.dialect.json_text("payload_json", "approvers")
                clauses.append(f"coalesce({approvers}, '') <> 'admins'")
        return await self._select(
            f"WHERE {' AND '.join(clauses)} ORDER BY id DESC LIMIT ?", (*params, limit)
        )

    async def fetch_asked_by(self, proposal_id: int, person: str | None) -> Proposal | None:
        if person is None:
            found = await self._select("WHERE id = ?", (proposal_id,))
        else:
            found = await self._select("WHERE id = ? AND requester = ?", (proposal_id, person))
        return found[0] if found else None

    async def fetch_pending_in(self, platform: str, channel_id: str) -> list[Proposal]:
        """Open proposals whose card is in one channel."""
        channel = self.db.dialect.json_text("conversation_json", "channel_id")
        return await self._select(
            f"WHERE status = 'pending' AND platform = ? AND {channel} = ? ORDER BY id",
            (platform, channel_id),
        )

    async def decide(self, proposal_id: int, *, approve: bool, decided_by: str) -> Proposal:
        """Approve or reject a pending proposal exactly once; note changes are applied in
        the same transaction. Raises `Conflict` when it is no longer pending or expired."""
        now = self.time(self.clock())
        try:
            async with self.db.transaction() as tx:
                proposal = await self._claim(tx, proposal_id, approve, decided_by, now)
                if not approve:
                    return proposal
                outcome = await apply_proposal(self.notes, tx, proposal)
                await tx.run(
                    "UPDATE proposals SET outcome = ? WHERE id = ?", (outcome, proposal.id)
                )
                return await self._one(tx, proposal_id)
        except InvalidInput as exc:
            if isinstance(exc, Conflict):
                raise
            # The change no longer applies (e.g. the note was already forgotten).
            return await self.refuse(proposal_id, str(exc), decided_by=decided_by)

    async def refuse(self, proposal_id: int, reason: str, *, decided_by: str) -> Proposal:
        """Close a pending proposal as failed without applying it, saying why; raises
        `Conflict` when it is no longer pending or expired."""
        now = self.time(self.clock())
        async with self.db.transaction() as sql:
            changed = await sql.run(
                "UPDATE proposals SET status = 'failed', outcome = ?, decided_by = ?, "
                "decided_at = ? WHERE id = ? AND status = 'pending' AND expires_at > ?",
                (reason, decided_by, now, proposal_id, now),
            )
            if changed != 1:
                await self._claim(sql, proposal_id, False, decided_by, now)  # raises why
            return await self._one(sql, proposal_id)

    async def claim_follow_up(self, proposal_id: int) -> bool:
        """Claim the follow-up of a decided proposal (its card edit and the resumed turn);
        True for exactly one caller, so a card is finished once across processes."""
        async with self.db.transaction() as sql:
            changed = await sql.run(
                "UPDATE proposals SET followed_up_at = ? WHERE id = ? "
                "AND status != 'pending' AND followed_up_at IS NULL",
                (self.time(self.clock()), proposal_id),
            )
        return changed == 1

    async def fetch_to_follow_up(self, platforms: Sequence[str]) -> list[Proposal]:
        """Decided proposals on these platforms whose card and turn are not finished yet,
        e.g. decided with `lorebot proposals approve` while the daemon runs."""
        if not platforms:
            return []
        return await self._select(
            "WHERE followed_up_at IS NULL AND status != 'pending' "
            f"AND platform IN ({marks(len(platforms))}) ORDER BY id",
            tuple(platforms),
        )

    async def fetch_to_remind(
        self, waiting_since: datetime, platforms: Sequence[str]
    ) -> list[Proposal]:
        """Pending proposals on these platforms whose card was posted and has waited since
        `waiting_since` or longer, and whose approvers were not reminded of it yet."""
        if not platforms:
            return []
        return await self._select(
            "WHERE status = 'pending' AND reminded_at IS NULL AND card_message_id IS NOT NULL "
            f"AND created_at <= ? AND platform IN ({marks(len(platforms))}) ORDER BY id",
            (self.time(waiting_since), *platforms),
        )

    async def claim_reminder(self, proposal_id: int) -> bool:
        """Claim the reminder of a waiting proposal; True for exactly one caller, so its
        approvers are reminded once across replicas."""
        async with self.db.transaction() as sql:
            changed = await sql.run(
                "UPDATE proposals SET reminded_at = ? WHERE id = ? "
                "AND status = 'pending' AND reminded_at IS NULL",
                (self.time(self.clock()), proposal_id),
            )
        return changed == 1

    async def record_reminder(self, proposal_id: int, channel_id: str, message_id: str) -> None:
        """Keep the DM that reminded someone of a card, which decides it and is finished
        with it."""
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO card_reminders (proposal_id, channel_id, message_id) "
                "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (proposal_id, channel_id, message_id),
            )

    async def fetch_reminders(self, proposal_id: int) -> list[tuple[str, str]]:
        """The DMs (channel, message) that reminded people of a card."""
        async with self.db.reading() as sql:
            rows = await sql.rows(
                "SELECT channel_id, message_id FROM card_reminders WHERE proposal_id = ? "
                "ORDER BY channel_id, message_id",
                (proposal_id,),
            )
        return [(str(row["channel_id"]), str(row["message_id"])) for row in rows]

    async def count_waiting(self, waiting_since: datetime) -> int:
        """How many proposals have waited for a decision since `waiting_since` or longer."""
        async with self.db.reading() as sql:
            row = await sql.row(
                "SELECT count(*) AS n FROM proposals WHERE status = 'pending' AND created_at <= ?",
                (self.time(waiting_since),),
            )
        return int(row["n"]) if row is not None else 0

    async def mark(self, proposal_id: int, outcome: str, *, failed: bool = False) -> Proposal:
        """Record what happened when a decided proposal was carried out outside SQL."""
        async with self.db.transaction() as sql:
            await sql.run(
                "UPDATE proposals SET outcome = ?, status = CASE WHEN ? THEN 'failed' "
                "ELSE status END WHERE id = ?",
                (outcome, failed, proposal_id),
            )
            return await self._one(sql, proposal_id)

    async def expire_due(self) -> list[Proposal]:
        """Mark pending proposals past their expiry as expired and return them."""
        now = self.time(self.clock())
        async with self.db.transaction() as sql:
            due = await sql.rows(
                "SELECT id FROM proposals WHERE status = 'pending' AND expires_at <= ? "
                f"ORDER BY id {self.db.dialect.lock_rows('proposals')}",
                (now,),
            )
            ids = [row["id"] for row in due]
            await sql.run_many(
                "UPDATE proposals SET status = 'expired', decided_at = ? WHERE id = ?",
                [(now, i) for i in ids],
            )
            return [await self._one(sql, i) for i in ids]

    async def _claim(
        self, sql: Session, proposal_id: int, approve: bool, who: str, now: object
    ) -> Proposal:
        status = "approved" if approve else "rejected"
        changed = await sql.run(
            "UPDATE proposals SET status = ?, decided_by = ?, decided_at = ? "
            "WHERE id = ? AND status = 'pending' AND expires_at > ?",
            (status, who, now, proposal_id, now),
        )
        current = await self._one(sql, proposal_id)
        if changed == 1:
            return current
        if current.status == "pending":
            raise Conflict(f"proposal {proposal_id} expired at {current.expires_at:%H:%M}Z")
        raise Conflict(f"proposal {proposal_id} was already {current.status}")

    async def _one(self, sql: Session, proposal_id: int) -> Proposal:
        row = await sql.row("SELECT * FROM proposals WHERE id = ?", (proposal_id,))
        if row is None:
            raise NotFound(f"there is no proposal {proposal_id}")
        return proposal_from_row(row, self.db.dialect.read_time)

    async def _select(self, where: str, params: Params) -> list[Proposal]:
        async with self.db.reading() as sql:
            found = await sql.rows(f"SELECT * FROM proposals {where}", params)
        return [proposal_from_row(row, self.db.dialect.read_time) for row in found]
