"""The skills active in each conversation, with the content hash that was approved: a skill
changed since stops being active."""

from __future__ import annotations

from typing import Protocol


class ActiveSkills(Protocol):
    """Skill activations by conversation."""

    async def activate(self, conversation: str, name: str, sha256: str, by: str) -> None:
        """Remember that `name` at this content hash is active in `conversation`."""
        ...

    async def fetch(self, conversation: str) -> dict[str, str]:
        """Active skills of a conversation: name -> the content hash that was approved."""
        ...
