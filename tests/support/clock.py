"""A clock tests move by hand, for anything that expires or schedules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock tests move by hand, so nothing sleeps for real."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)
