"""Time as lorebot's stores see it: a clock that can be injected (tests move it by hand)
and always gives aware UTC times."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)
