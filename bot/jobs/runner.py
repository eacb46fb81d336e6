"""Running scheduled jobs once per period, on APScheduler, with catch-up and retries.

A run is identified by (job, scope, period), where the period is the scheduled fire time.
`job_runs` makes that idempotent across restarts and across processes (`lorebot jobs run`).
A run missed while the bot was down runs once at start when the job's policy is to catch
up and it is within the grace window; otherwise it is recorded as skipped. A failed run
is retried later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger

from bot import metrics
from bot.cron import cron_trigger
from memory.clock import Clock
from memory.stores.job_runs import JobRuns

_log = logging.getLogger(__name__)

LOOKBACK = timedelta(days=8)
ALL = "all"


class Job(Protocol):
    """A scheduled job: its schedules, the scopes a firing covers, and one run."""

    name: str
    catch_up: bool

    def schedules(self) -> Sequence[tuple[str, str]]:
        """(schedule scope, cron expression) pairs."""

    async def scopes(self, schedule_scope: str, fire_time: datetime) -> list[str]:
        """The scopes one firing runs for (e.g. every active conversation)."""

    async def run(self, scope: str, fire_time: datetime) -> str:
        """Do the work of one period; returns a short outcome for the log."""


def period_of(fire_time: datetime) -> str:
    return fire_time.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%MZ")


def parse_period(period: str) -> datetime:
    return datetime.strptime(period, "%Y-%m-%dT%H:%MZ").replace(tzinfo=ZoneInfo("UTC"))


def previous_fire_time(trigger: BaseTrigger, now: datetime) -> datetime | None:
    """The latest fire time at or before `now` (within a week), or None."""
    found = None
    moment = trigger.get_next_fire_time(None, now - LOOKBACK)
    while moment is not None and moment <= now:
        found = moment
        moment = trigger.get_next_fire_time(moment, moment + timedelta(seconds=1))
    return found


@dataclass(frozen=True, slots=True)
class RunResult:
    job: str
    scope: str
    period: str
    status: str  # succeeded, failed, already-done
    detail: str = ""


class JobRunner:
    """Owns the scheduler and every run's bookkeeping."""

    def __init__(
        self,
        jobs: Sequence[Job],
        runs: JobRuns,
        *,
        clock: Clock,
        timezone: str,
        grace: timedelta,
        retry_after: timedelta,
    ) -> None:
        self.jobs = {job.name: job for job in jobs}
        self.runs = runs
        self.clock = clock
        self.timezone = ZoneInfo(timezone)
        self.grace = grace
        self.retry_after = retry_after
        self.scheduler: AsyncIOScheduler | None = None
        self._locks = {name: asyncio.Lock() for name in self.jobs}
        # The tasks running a period now (scheduled, caught up or retried): a shutdown
        # stops them rather than waiting on a job that waits on the model.
        self._running: set[asyncio.Task[Any]] = set()

    def trigger(self, cron: str) -> BaseTrigger:
        return cron_trigger(cron, self.timezone)

    def next_run(self, job: Job, now: datetime) -> datetime | None:
        times = [self.trigger(cron).get_next_fire_time(None, now) for _, cron in job.schedules()]
        found = [t for t in times if t is not None]
        return min(found) if found else None

    async def run(self, job: Job, scope: str, fire_time: datetime) -> RunResult:
        """One period of one scope, at most once; runs of one job never overlap."""
        with self._tracked():
            return await self._run_once(job, scope, fire_time, period_of(fire_time))

    @contextlib.contextmanager
    def _tracked(self) -> Iterator[None]:
        """Count the current task among the runs in flight, for `shutdown` to stop."""
        task = asyncio.current_task()
        if task is None or task in self._running:
            yield
            return
        self._running.add(task)
        try:
            yield
        finally:
            self._running.discard(task)

    async def _run_once(self, job: Job, scope: str, fire_time: datetime, period: str) -> RunResult:
        async with self._locks[job.name]:
            if not await self.runs.claim(job.name, scope, period):
                return RunResult(job.name, scope, period, "already-done")
            try:
                detail = await job.run(scope, fire_time)
            except asyncio.CancelledError:
                # Stopped (shutdown, or this replica lost the lead): the period is run
                # again at the next start, or by the next leader, within the grace window.
                await self.runs.finish(
                    job.name, scope, period, "failed", "stopped before it finished"
                )
                _log.info("job %s %s %s stopped before it finished", job.name, scope, period)
                raise
            except Exception as exc:
                await self.runs.finish(
                    job.name, scope, period, "failed", f"{type(exc).__name__}: {exc}"
                )
                _log.warning("job %s %s %s failed: %s; will retry", job.name, scope, period, exc)
                self._schedule_retry(job, scope, fire_time)
                metrics.JOB_RUNS.labels(job.name, "failed").inc()
                return RunResult(job.name, scope, period, "failed", str(exc))
            await self.runs.finish(job.name, scope, period, "succeeded", detail[:500])
        metrics.JOB_RUNS.labels(job.name, "succeeded").inc()
        _log.info("job %s %s %s: %s", job.name, scope, period, detail)
        return RunResult(job.name, scope, period, "succeeded", detail)

    async def fire(self, job: Job, schedule_scope: str, cron: str) -> list[RunResult]:
        """What the scheduler calls: run the period that is due now."""
        fire_time = previous_fire_time(self.trigger(cron), self.clock()) or self.clock()
        return await self.run_period(job, schedule_scope, fire_time)

    async def run_period(
        self, job: Job, schedule_scope: str, fire_time: datetime
    ) -> list[RunResult]:
        results = []
        for scope in await job.scopes(schedule_scope, fire_time):
            results.append(await self.run(job, scope, fire_time))
        return results

    async def catch_up(self) -> list[RunResult]:
        """At start: run or record each job's last period that has no successful run."""
        with self._tracked():
            return await self._catch_up()

    async def _catch_up(self) -> list[RunResult]:
        now = self.clock()
        results: list[RunResult] = []
        for job in self.jobs.values():
            for schedule_scope, cron in job.schedules():
                due = previous_fire_time(self.trigger(cron), now)
                if due is None:
                    continue
                if job.catch_up and now - due <= self.grace:
                    results += await self.run_period(job, schedule_scope, due)
                    continue
                for scope in await job.scopes(schedule_scope, due):
                    if await self.runs.record_skipped(
                        job.name, scope, period_of(due), "missed while lorebot was not running"
                    ):
                        _log.info("job %s %s missed its %s run", job.name, scope, period_of(due))
        return results

    def start(self) -> None:
        """Schedule every job on the running event loop."""
        self.scheduler = AsyncIOScheduler(timezone=self.timezone)
        for job in self.jobs.values():
            for schedule_scope, cron in job.schedules():
                self.scheduler.add_job(
                    self.fire,
                    self.trigger(cron),
                    args=[job, schedule_scope, cron],
                    id=f"{job.name}:{schedule_scope}",
                    max_instances=1,
                    coalesce=True,
                    misfire_grace_time=int(self.grace.total_seconds()) or None,
                )
        self.scheduler.start()

    def _schedule_retry(self, job: Job, scope: str, fire_time: datetime) -> None:
        if self.scheduler is None or not self.scheduler.running:
            return
        self.scheduler.add_job(
            self.run,
            "date",
            run_date=self.clock() + self.retry_after,
            args=[job, scope, fire_time],
            id=f"retry:{job.name}:{scope}:{period_of(fire_time)}",
            replace_existing=True,
        )

    async def shutdown(self) -> None:
        """Stop scheduling and stop the runs in flight (each is marked failed, to run again);
        safe to call twice. Never waits on a job: one may wait minutes on the model."""
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        running = [task for task in self._running if task is not asyncio.current_task()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
