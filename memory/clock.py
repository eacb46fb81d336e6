"""Time as lorebot's stores see it: a clock that can be injected (tests move it by hand)
and always gives aware UTC times, and the fixed-width text that stores and exports keep."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def to_utc_text(moment: datetime) -> str:
    """A fixed-width UTC text form (`2026-11-02T09:00:00.000000Z`) that sorts as it reads."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: lorebot stores aware UTC times only")
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_utc_text(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)
