"""skill_load: a skill the model wants loaded into the conversation, loaded when the
requester (or an admin) approves its card; the turn that asked waits for the decision,
and the load tool activates the skill, unless it changed since the card."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.base import APPROVE
from bot.approvals.kinds.base import Plain, Records, closed_text
from memory.stores.proposals import Proposal

SKILL_LOAD = "skill_load"


@dataclass(frozen=True, slots=True)
class SkillLoad:
    """The payload: the skill as the card showed it."""

    name: str
    sha256: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "path": self.path}

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> SkillLoad:
        return cls(payload["name"], payload["sha256"], payload["path"])


class SkillLoadKind(Plain):
    """Loading a skill the model asked for."""

    name = SKILL_LOAD
    verb = "load it"
    asks = "load the skill"
    label = "load the skill"

    def payload(self, proposal: Proposal) -> SkillLoad:
        return SkillLoad.from_json(proposal.payload)

    def subject(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("name", "?"))

    def card(self, name: str, lines: Sequence[str]) -> str:
        """The card: the skill, then what the skill catalog says of it (`lines`)."""
        return "\n".join([f"🧩 Load the skill `{name}`?", *lines])

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        name = self.subject(proposal.payload)
        closed = closed_text(proposal, name, declined="loaded")
        return closed or f"{APPROVE} Loaded the skill `{name}` for this conversation."

    def resume_message(self, proposal: Proposal) -> str:
        if proposal.status == "approved":
            return super().resume_message(proposal)
        name = self.subject(proposal.payload)
        return f"the person declined loading the skill {name}; continue without it"


SKILL_LOAD_KIND = SkillLoadKind()
