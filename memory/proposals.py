"""Proposals: changes waiting for a person's decision (a card), and the store that keeps
them so a restart loses none. A decision is claimed and applied in one transaction, so it
happens exactly once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from memory.types import Category, NoteDraft, Scope

# A note that changed after its card was shown is not touched: the person approved what
# the card said, not what the note became. The message names no content.
STALE = (
    "the note changed after this card was shown, so nothing was applied; "
    "ask again to see it as it is now"
)
NOTE_SAVE = "note_save"
NOTE_FORGET = "note_forget"
SKILL_LOAD = "skill_load"
SKILL_CREATE = "skill_create"


@dataclass(frozen=True, slots=True)
class Proposal:
    """A pending or decided proposal."""

    id: int
    kind: str
    status: str
    requester: str
    platform: str
    conversation: dict[str, Any]
    card_message_id: str | None
    payload: dict[str, Any]
    created_at: datetime
    expires_at: datetime
    decided_by: str | None
    outcome: str
    followed_up: bool = False
    decided_at: datetime | None = None  # when it was approved, rejected or expired

    @property
    def pending(self) -> bool:
        return self.status == "pending"


def note_save_payload(draft: NoteDraft) -> dict[str, Any]:
    return {
        "scope": str(draft.scope),
        "topic": draft.topic,
        "summary": draft.summary,
        "body": draft.body,
        "category": draft.category.value,
        "private": draft.private,
        "source": draft.source,
        "author": draft.author,
    }


def draft_from_payload(payload: Mapping[str, Any]) -> NoteDraft:
    return NoteDraft(
        scope=Scope.parse(payload["scope"]),
        topic=payload["topic"],
        summary=payload["summary"],
        body=payload.get("body", ""),
        category=Category(payload.get("category", "fact")),
        private=bool(payload.get("private", False)),
        source=payload.get("source", ""),
        author=payload.get("author", ""),
    )


class ProposalStore(Protocol):
    """Creation, lookup, decision and expiry of proposals."""

    async def create(
        self,
        kind: str,
        *,
        requester: str,
        platform: str,
        conversation: Mapping[str, Any],
        payload: Mapping[str, Any],
        ttl: timedelta,
    ) -> Proposal: ...

    async def attach_card(
        self, proposal_id: int, channel_id: str, card_message_id: str
    ) -> None: ...

    async def fetch(self, proposal_id: int) -> Proposal:
        """The proposal; `NotFound` when there is none."""
        ...

    async def fetch_by_card(
        self, platform: str, channel_id: str, card_message_id: str
    ) -> Proposal | None:
        """The proposal whose card is message `card_message_id` in `channel_id` (a Slack
        ts is unique only within its channel)."""
        ...

    async def fetch_recent(self, status: str | None = None, limit: int = 100) -> list[Proposal]: ...

    async def fetch_pending_in(self, platform: str, channel_id: str) -> list[Proposal]:
        """Open proposals whose card is in one channel."""
        ...

    async def decide(self, proposal_id: int, *, approve: bool, decided_by: str) -> Proposal:
        """Approve or reject a pending proposal exactly once; note changes are applied in
        the same transaction. Raises `Conflict` when it is no longer pending or expired."""
        ...

    async def refuse(self, proposal_id: int, reason: str, *, decided_by: str) -> Proposal:
        """Close a pending proposal as failed without applying it, saying why; raises
        `Conflict` when it is no longer pending or expired."""
        ...

    async def claim_follow_up(self, proposal_id: int) -> bool:
        """Claim the follow-up of a decided proposal (its card edit and the resumed turn);
        True for exactly one caller, so a card is finished once across processes."""
        ...

    async def fetch_to_follow_up(self, platforms: Sequence[str]) -> list[Proposal]:
        """Decided proposals on these platforms whose card and turn are not finished yet,
        e.g. decided with `lorebot proposals approve` while the daemon runs."""
        ...

    async def mark(self, proposal_id: int, outcome: str, *, failed: bool = False) -> Proposal:
        """Record what happened when a decided proposal was carried out outside the store."""
        ...

    async def expire_due(self) -> list[Proposal]:
        """Mark pending proposals past their expiry as expired and return them."""
        ...
