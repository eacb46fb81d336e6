"""skill_create: a new skill the model drafted, written to the skill folder when the
requester (or an admin) approves its card, which shows the whole SKILL.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.base import APPROVE
from bot.approvals.kinds.base import Plain, Records, closed_text
from memory.stores.proposals import Proposal
from skills.types import SkillError
from skills.writer import write_skill

SKILL_CREATE = "skill_create"


@dataclass(frozen=True, slots=True)
class SkillCreate:
    """The payload: the skill's name and its whole SKILL.md."""

    name: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text}

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> SkillCreate:
        return cls(payload["name"], payload["text"])


class SkillCreateKind(Plain):
    """Creating a skill."""

    name = SKILL_CREATE
    verb = "create it"
    asks = "create the skill"
    label = "create the skill"
    writes_memory = True

    def payload(self, proposal: Proposal) -> SkillCreate:
        return SkillCreate.from_json(proposal.payload)

    def subject(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("name", "?"))

    def card(self, skill: SkillCreate, root: Path | None) -> str:
        """The card: where the skill goes, and all of it."""
        where = root / skill.name if root else skill.name
        return f"🛠️ Create the skill `{skill.name}` in {where}?\n```\n{skill.text.strip()}\n```"

    async def carry_out(self, proposal: Proposal, records: Records) -> Proposal:
        """Write the skill; a failure is recorded on the proposal."""
        if records.skill_root is None:
            return await records.proposals.mark(proposal.id, "no skill folder is set", failed=True)
        skill = self.payload(proposal)
        try:
            path = write_skill(records.skill_root, skill.name, skill.text)
        except (SkillError, OSError) as exc:
            return await records.proposals.mark(proposal.id, f"not written: {exc}", failed=True)
        return await records.proposals.mark(proposal.id, f"written to {path}")

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        name = self.subject(proposal.payload)
        closed = closed_text(proposal, name, declined="created")
        return closed or f"{APPROVE} Created the skill `{name}`: {proposal.outcome}."


SKILL_CREATE_KIND = SkillCreateKind()
