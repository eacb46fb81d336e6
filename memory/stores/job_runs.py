"""Job runs under an idempotency key (job, scope, period): a period runs once; a failed one
can be claimed again; a run left `running` by a crash is reclaimed after a while."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

STALE_AFTER = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class JobRun:
    job: str
    scope: str
    period: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    error: str
    attempts: int


class JobRuns(Protocol):
    """The runs of scheduled jobs, by (job, scope, period)."""

    async def claim(self, job: str, scope: str, period: str) -> bool:
        """Start a run of this period unless it succeeded, was skipped, or is running now."""
        ...

    async def finish(
        self, job: str, scope: str, period: str, status: str, error: str = ""
    ) -> None: ...

    async def record_skipped(self, job: str, scope: str, period: str, reason: str) -> bool:
        """Record a period that will not run (missed while down, past the grace window)."""
        ...

    async def fetch(self, job: str, scope: str, period: str) -> JobRun | None: ...

    async def fetch_last(
        self, job: str, scope: str | None = None, status: str | None = None
    ) -> JobRun | None: ...

    async def fetch_failed(self, job: str) -> list[JobRun]: ...

    async def fetch_recent(self, limit: int = 50) -> list[JobRun]:
        """The latest runs of every job, newest first."""
        ...
