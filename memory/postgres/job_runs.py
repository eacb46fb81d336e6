"""Job runs under an idempotency key (job, scope, period): a period runs once, also when
two replicas try it together; a failed one can be claimed again; a run left `running` by
a crash is reclaimed after a while."""

from __future__ import annotations

from typing import Any

from memory.clock import Clock, utc_now
from memory.job_runs import STALE_AFTER, JobRun
from memory.postgres.database import PostgresDatabase, utc


class PostgresJobRuns:
    """The `job_runs` table."""

    def __init__(self, db: PostgresDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def claim(self, job: str, scope: str, period: str) -> bool:
        """Start a run of this period unless it succeeded, was skipped, or is running now."""
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO job_runs (job, scope, period, started_at, status) "
                "VALUES (%s, %s, %s, %s, 'running') ON CONFLICT (job, scope, period) DO UPDATE "
                "SET status = 'running', started_at = excluded.started_at, finished_at = NULL, "
                "error = '', attempts = job_runs.attempts + 1 WHERE job_runs.status = 'failed' "
                "OR (job_runs.status = 'running' AND job_runs.started_at < %s)",
                (job, scope, period, now, now - STALE_AFTER),
            )
        return cursor.rowcount == 1

    async def finish(self, job: str, scope: str, period: str, status: str, error: str = "") -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE job_runs SET status = %s, error = %s, finished_at = %s "
                "WHERE job = %s AND scope = %s AND period = %s",
                (status, error, self.clock(), job, scope, period),
            )

    async def record_skipped(self, job: str, scope: str, period: str, reason: str) -> bool:
        """Record a period that will not run (missed while down, past the grace window)."""
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO job_runs (job, scope, period, started_at, finished_at, status, "
                "error) VALUES (%s, %s, %s, %s, %s, 'skipped', %s) ON CONFLICT DO NOTHING",
                (job, scope, period, now, now, reason),
            )
        return cursor.rowcount == 1

    async def fetch(self, job: str, scope: str, period: str) -> JobRun | None:
        runs = await self._select(
            "WHERE job = %s AND scope = %s AND period = %s", (job, scope, period)
        )
        return runs[0] if runs else None

    async def fetch_last(
        self, job: str, scope: str | None = None, status: str | None = None
    ) -> JobRun | None:
        clauses, params = ["job = %s"], [job]
        if scope is not None:
            clauses.append("scope = %s")
            params.append(scope)
        if status is not None:
            clauses.append("status = %s")
            params.append(status)
        runs = await self._select(
            f"WHERE {' AND '.join(clauses)} ORDER BY period DESC, id DESC LIMIT 1",
            tuple(params),
        )
        return runs[0] if runs else None

    async def fetch_failed(self, job: str) -> list[JobRun]:
        return await self._select("WHERE job = %s AND status = 'failed' ORDER BY id", (job,))

    async def _select(self, where: str, params: tuple[object, ...]) -> list[JobRun]:
        found: list[dict[str, Any]] = await self.db.rows(f"SELECT * FROM job_runs {where}", params)
        return [
            JobRun(
                job=r["job"], scope=r["scope"], period=r["period"], status=r["status"],
                started_at=utc(r["started_at"]) or self.clock(),
                finished_at=utc(r["finished_at"]), error=r["error"], attempts=r["attempts"],
            )
            for r in found
        ]  # fmt: skip
