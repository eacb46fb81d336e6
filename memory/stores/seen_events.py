"""The platform events lorebot has taken, by their id, for a day: a Slack retry or a gateway
replay of one of them is dropped."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol


class SeenEvents(Protocol):
    """Event ids seen, with when."""

    async def first_sighting(self, key: str) -> bool:
        """Record a platform event id; False when it was already seen (a retry or replay)."""
        ...

    async def seen(self, key: str) -> bool:
        """Whether a platform event id was recorded already."""
        ...

    async def forget_sighting(self, key: str) -> None:
        """Forget one event id, so the same id counts as new when it comes again."""
        ...

    async def forget_seen_before(self, age: timedelta = timedelta(days=1)) -> int:
        """Drop event ids older than `age`; a replay that late is not expected."""
        ...
