"""The times a model slipped in a turn (an empty answer, an action announced but not called,
the same call again, a tool that does not exist), by kind, so `lorebot doctor` can show
how often the model in use fails at the job."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

# Older slips say little about the model in use now.
KEEP_FOR = timedelta(days=30)


class ModelSlips(Protocol):
    """Slips of the model, with when and in which conversation."""

    async def record(self, kind: str, conversation: str) -> None:
        """Count one slip of `kind`; slips older than `KEEP_FOR` are dropped meanwhile."""
        ...

    async def fetch_counts_since(self, since: datetime) -> dict[str, int]:
        """How many slips of each kind happened at or after `since`."""
        ...
