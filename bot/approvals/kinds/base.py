"""What a proposal kind is: one object holding everything about one kind of card, so that
adding a kind is one module here and a line in `registry.py`.

A kind has a typed payload (what its proposal stores, with `to_json`/`from_json`), card
text, what its approval does (a note kind's change is applied in the decision's own
transaction by its payload in `memory.stores.proposals`; anything else, after it, in
`carry_out`), the card's final text, what the model is told when the turn that waited
resumes, and what is captured for pattern extraction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from adapters.base import APPROVE, REJECT
from memory import NoteStore
from memory.stores.actions import ActionLog
from memory.stores.proposals import Proposal, ProposalStore

# The decisions after which the turn that waited on a card resumes.
DECIDED = frozenset({"approved", "rejected"})


class Records(Protocol):
    """Where a kind reads, and records, what became of a decided proposal (the approval
    service is one)."""

    @property
    def proposals(self) -> ProposalStore: ...

    @property
    def notes(self) -> NoteStore: ...

    @property
    def actions(self) -> ActionLog: ...

    @property
    def skill_root(self) -> Path | None: ...


@dataclass(frozen=True, slots=True)
class Allowance:
    """What an admin's ♾️ on a card allows from then on in its channel: a server's tool."""

    tool: str
    server_id: str


class ProposalKind(Protocol):
    """One kind of proposal. Its payload type and card text are its own (each kind is
    proposed by code that knows it); the rest is asked of any proposal's kind."""

    @property
    def name(self) -> str:
        """The kind as proposals store it."""

    @property
    def verb(self) -> str:
        """What ✅ does, as the card's footer says it: "React ✅ to {verb}"."""

    @property
    def asks(self) -> str:
        """What ✅ does, told where the card was posted: "react ✅ on it to {asks}"."""

    @property
    def label(self) -> str:
        """What ✅ does, as the console lists the open cards: "{label} `{subject}`"."""

    @property
    def writes_memory(self) -> bool:
        """Whether it changes memory, so it is refused where memory became read-only."""

    @property
    def resumes_on(self) -> frozenset[str]:
        """The decisions after which the turn that waited on it resumes."""

    def subject(self, payload: Mapping[str, Any]) -> str:
        """What it is about: a note's topic, a skill's name, a tool."""

    def allowance(self, payload: Mapping[str, Any]) -> Allowance | None:
        """What an admin's ♾️ allows besides approving this card; None when ♾️ does not
        apply to it, or approves only this card."""

    def always_approvable(self) -> bool:
        """Whether an admin's ♾️ approves it (only an action's card)."""

    def captured(self, proposal: Proposal) -> Mapping[str, Any] | None:
        """The arguments recorded as an event when it is approved; None when it is
        captured later (an action, when it has run)."""

    async def carry_out(self, proposal: Proposal, records: Records) -> Proposal:
        """What an approval does after the decision's transaction, recorded on the
        proposal, which is returned as it is then."""

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        """The card's final text, from the database rows, never from the model."""

    def resume_message(self, proposal: Proposal) -> str:
        """What the model is told when the turn that waited resumes, where the tool that
        asked does not carry out the decision itself."""

    async def tool_gone(self, proposal: Proposal, tool: str, actions: ActionLog) -> None:
        """Record that the tool that would carry out the decision is not available."""


class Plain:
    """What most kinds do alike: nothing after the decision, nothing for ♾️, the payload
    captured but for the waiting turn and a skill's text, and the decision told as it is.
    A kind uses these as its own."""

    __slots__ = ()
    verb = "approve it"
    writes_memory = False
    resumes_on = DECIDED

    def allowance(self, payload: Mapping[str, Any]) -> Allowance | None:
        return None

    def always_approvable(self) -> bool:
        return False

    def captured(self, proposal: Proposal) -> Mapping[str, Any] | None:
        # Never the conversation a turn waits with, nor a skill's whole text.
        return {k: v for k, v in proposal.payload.items() if k not in ("turn", "text")}

    async def carry_out(self, proposal: Proposal, records: Records) -> Proposal:
        return proposal

    def resume_message(self, proposal: Proposal) -> str:
        return f"proposal #{proposal.id} was {proposal.status}"

    async def tool_gone(self, proposal: Proposal, tool: str, actions: ActionLog) -> None:
        return None


def closed_text(proposal: Proposal, subject: str, declined: str = "") -> str | None:
    """The final text of a card that was not carried out (expired, rejected, or refused
    when applied); None for an approved one. `declined` names what a rejection left
    undone ("loaded"); without it the card says it was discarded."""
    if proposal.status == "expired":
        hours = (proposal.expires_at - proposal.created_at).total_seconds() / 3600
        return (
            f"⌛ Expired (proposal #{proposal.id}): nobody decided within {hours:g} h, "
            f"so `{subject}` was left as it was."
        )
    if proposal.status == "rejected":
        if declined:
            return f"{REJECT} Declined (proposal #{proposal.id}): `{subject}` was not {declined}."
        return f"{REJECT} Discarded (proposal #{proposal.id}): `{subject}` was left as it was."
    if proposal.status == "failed":
        return f"⚠️ Not applied (proposal #{proposal.id}): {proposal.outcome}"
    return None


def approved_text(proposal: Proposal) -> str:
    """The final text of an approved card that has nothing more to say."""
    return f"{APPROVE} Approved (proposal #{proposal.id})."
