"""Each conversation's daily log: what the reflection job wrote of its day, shown to the
model on the next turns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Protocol


class DailyLogs(Protocol):
    """Daily log entries by conversation and day."""

    async def write(self, conversation: str, day: date, content: str) -> None:
        """Write (or replace) the log of `conversation` for `day`."""
        ...

    async def fetch(self, conversation: str, days: Sequence[date]) -> dict[date, str]:
        """The log entries of `conversation` for the given days that exist."""
        ...
