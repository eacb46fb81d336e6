"""Every proposal kind by the name proposals store, and the kind of any proposal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.approvals.kinds.action import ACTION
from bot.approvals.kinds.base import Plain, ProposalKind, Records, approved_text, closed_text
from bot.approvals.kinds.note_forget import NOTE_FORGET_KIND
from bot.approvals.kinds.note_save import NOTE_SAVE_KIND
from bot.approvals.kinds.skill_create import SKILL_CREATE_KIND
from bot.approvals.kinds.skill_load import SKILL_LOAD_KIND
from memory.stores.proposals import Proposal

KINDS: Mapping[str, ProposalKind] = {
    kind.name: kind
    for kind in (NOTE_SAVE_KIND, NOTE_FORGET_KIND, SKILL_LOAD_KIND, SKILL_CREATE_KIND, ACTION)
}


@dataclass(frozen=True, slots=True)
class OtherKind(Plain):
    """A kind lorebot has no definition of: a tool's own question, or one a later lorebot
    stored. Its card closes as any card does, and the decision is told as it is."""

    name: str
    verb: str = "approve it"

    @property
    def asks(self) -> str:
        return self.verb

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")

    def subject(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("topic") or payload.get("name") or payload.get("tool") or "")

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        subject = str(proposal.payload.get("topic", proposal.payload.get("name", "?")))
        return closed_text(proposal, subject) or approved_text(proposal)


def get_kind(name: str) -> ProposalKind:
    """The kind named `name`; one without a definition here is an `OtherKind`."""
    return KINDS.get(name) or OtherKind(name)
