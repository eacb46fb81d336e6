"""What a turn reads of the stores before it asks the model, read together: one round trip
where the engine allows (the conversation's history, its daily logs, the skills active in
it, and the scope indexes its speaker sees)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from memory.policy.visibility import Visibility
from memory.stores.conversations import History
from memory.stores.index import ScopeIndex


@dataclass(frozen=True, slots=True)
class TurnReading:
    """What a turn read, each part as its store's own read gives it."""

    history: History  # `ConversationLog.fetch_history`
    daily_logs: dict[date, str]  # `DailyLogs.fetch`
    active_skills: dict[str, str]  # `ActiveSkills.fetch`
    indexes: list[ScopeIndex]  # `NoteStore.indexes_for`


class TurnReads(Protocol):
    """A turn's reads of several stores, sent together."""

    async def fetch(
        self,
        history_key: str,
        conversation: str,
        days: Sequence[date],
        visibility: Visibility,
    ) -> TurnReading:
        """What the stores' own reads give for the history of `history_key`, the daily logs
        of `days`, the skills active in `conversation` and the indexes `visibility` sees."""
        ...
