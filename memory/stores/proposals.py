"""Proposals: changes waiting for a person's decision (a card), and the store that keeps
them so a restart loses none. A decision is claimed and applied in one transaction, so it
happens exactly once: the note kinds' payloads and how each is applied in that transaction
are here, beside the store (everything else about a kind is in `bot/approvals/kinds/`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memory.errors import InvalidInput
from memory.policy.note_states import content_fingerprint
from memory.types import Category, NoteDraft, Scope

if TYPE_CHECKING:
    from memory.stores.database import Transaction
    from memory.stores.notes import NoteStore

# A note that changed after its card was shown is not touched: the person approved what
# the card said, not what the note became. The message names no content.
STALE = (
    "the note changed after this card was shown, so nothing was applied; "
    "ask again to see it as it is now"
)
NOTE_SAVE = "note_save"
NOTE_FORGET = "note_forget"


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


@dataclass(frozen=True, slots=True)
class NoteSave:
    """A note_save proposal's payload: the note to save and, when the card recorded it,
    the state of the note it replaces (`expect`, None for no note) as the card showed it.
    Cards made before they recorded it (`recorded` False) are not checked."""

    draft: NoteDraft
    expect: str | None = None
    recorded: bool = True

    def to_json(self) -> dict[str, Any]:
        draft = self.draft
        stored: dict[str, Any] = {
            "scope": str(draft.scope),
            "topic": draft.topic,
            "summary": draft.summary,
            "body": draft.body,
            "category": draft.category.value,
            "private": draft.private,
            "source": draft.source,
            "author": draft.author,
        }
        return {**stored, "expect": self.expect} if self.recorded else stored

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> NoteSave:
        draft = NoteDraft(
            scope=Scope.parse(payload["scope"]),
            topic=payload["topic"],
            summary=payload["summary"],
            body=payload.get("body", ""),
            category=Category(payload.get("category", "fact")),
            private=bool(payload.get("private", False)),
            source=payload.get("source", ""),
            author=payload.get("author", ""),
        )
        return cls(draft, payload.get("expect"), "expect" in payload)

    async def apply(self, notes: NoteStore, tx: Transaction, proposal: Proposal) -> str:
        """Save the note; "created", "updated" or "unchanged"."""
        draft = notes.validate(self.draft)
        current = await notes.state_in(tx, draft.scope, draft.topic)
        _check_unchanged(self, current)
        if current is not None and current["private"] and not draft.private:
            # A private note never becomes public from a card; only its owner, in a DM.
            raise InvalidInput(STALE)
        reason = f"proposal {proposal.id}"
        result = await notes.save_in(tx, draft, proposal.requester, reason, proposal.id)
        if result.change_id is None:
            return "unchanged"
        return "created" if result.created else "updated"


@dataclass(frozen=True, slots=True)
class NoteForget:
    """A note_forget proposal's payload: the note to forget and its state as the card
    showed it (see `NoteSave`)."""

    scope: Scope
    topic: str
    expect: str | None = None
    recorded: bool = True

    def to_json(self) -> dict[str, Any]:
        stored = {"scope": str(self.scope), "topic": self.topic}
        return {**stored, "expect": self.expect} if self.recorded else stored

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> NoteForget:
        scope = Scope.parse(payload["scope"])
        return cls(scope, payload["topic"], payload.get("expect"), "expect" in payload)

    async def apply(self, notes: NoteStore, tx: Transaction, proposal: Proposal) -> str:
        """Forget the note; "forgotten"."""
        current = await notes.state_in(tx, self.scope, self.topic)
        if current is not None:
            _check_unchanged(self, current)
        reason = f"proposal {proposal.id}"
        await notes.forget_in(tx, self.scope, self.topic, proposal.requester, reason, proposal.id)
        return "forgotten"


class AppliedInTransaction(Protocol):
    """A payload whose approval changes memory in the decision's own transaction."""

    async def apply(self, notes: NoteStore, tx: Transaction, proposal: Proposal) -> str:
        """Carry the change out; the outcome its card shows."""
        ...


# The kinds whose approval changes memory in the decision's transaction, each read from
# its stored payload.
IN_TRANSACTION: Mapping[str, Callable[[Mapping[str, Any]], AppliedInTransaction]] = {
    NOTE_SAVE: NoteSave.from_json,
    NOTE_FORGET: NoteForget.from_json,
}


async def apply_proposal(notes: NoteStore, tx: Transaction, proposal: Proposal) -> str:
    """Carry out an approved proposal's note change inside the decision's transaction, on
    any engine; the outcome shown on its card ("approved" for a kind that changes no note
    there). `InvalidInput` (`STALE`) when the note is no longer as the card showed it."""
    read = IN_TRANSACTION.get(proposal.kind)
    return "approved" if read is None else await read(proposal.payload).apply(notes, tx, proposal)


def _check_unchanged(payload: NoteSave | NoteForget, current: Mapping[str, object] | None) -> None:
    """Raise `InvalidInput` when the note is no longer as the card showed it."""
    if payload.recorded and payload.expect != content_fingerprint(current):
        raise InvalidInput(STALE)


def proposal_from_row(row: Any, time: Callable[[Any], datetime | None]) -> Proposal:
    """A `proposals` row as a `Proposal`; `time` reads the engine's time columns."""
    created = time(row["created_at"])
    expires = time(row["expires_at"])
    assert created is not None and expires is not None
    return Proposal(
        id=row["id"],
        kind=row["kind"],
        status=row["status"],
        requester=row["requester"],
        platform=row["platform"],
        conversation=json.loads(row["conversation_json"]),
        card_message_id=row["card_message_id"],
        payload=json.loads(row["payload_json"]),
        created_at=created,
        expires_at=expires,
        decided_by=row["decided_by"],
        outcome=row["outcome"],
        followed_up=row["followed_up_at"] is not None,
        decided_at=time(row["decided_at"]),
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

    async def fetch_for(
        self, person: str | None, *, waiting: bool, limit: int = 100
    ) -> list[Proposal]:
        """The newest cards `person` may decide (`waiting`: posted and pending) or asked for
        (decided: the rest), newest first; None for an admin: every card."""
        ...

    async def fetch_asked_by(self, proposal_id: int, person: str | None) -> Proposal | None:
        """One proposal, if `person` asked for it (None: any, for an admin)."""
        ...

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

    async def fetch_to_remind(
        self, waiting_since: datetime, platforms: Sequence[str]
    ) -> list[Proposal]:
        """Pending proposals on these platforms whose card was posted and has waited since
        `waiting_since` or longer, and whose approvers were not reminded of it yet."""
        ...

    async def claim_reminder(self, proposal_id: int) -> bool:
        """Claim the reminder of a waiting proposal; True for exactly one caller."""
        ...

    async def record_reminder(self, proposal_id: int, channel_id: str, message_id: str) -> None:
        """Keep the DM that reminded someone of a card."""
        ...

    async def fetch_reminders(self, proposal_id: int) -> list[tuple[str, str]]:
        """The DMs (channel, message) that reminded people of a card."""
        ...

    async def count_waiting(self, waiting_since: datetime) -> int:
        """How many proposals have waited for a decision since `waiting_since` or longer."""
        ...

    async def mark(self, proposal_id: int, outcome: str, *, failed: bool = False) -> Proposal:
        """Record what happened when a decided proposal was carried out outside the store."""
        ...

    async def expire_due(self) -> list[Proposal]:
        """Mark pending proposals past their expiry as expired and return them."""
        ...
