"""Job runs under an idempotency key (job, scope, period): a period runs once, also when
two replicas try it together; a failed one can be claimed again; a run left `running` by
a crash is reclaimed after a while."""

from __future__ import annotations

from memory.clock import Clock, utc_now
from memory.sql.session import Params, SqlDatabase
from memory.stores.job_runs import STALE_AFTER, JobRun


class SqlJobRuns:
    """The `job_runs` table."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock
        self.time = db.dialect.time

    async def claim(self, job: str, scope: str, period: str) -> bool:
        """Start a run of this period unless it succeeded, was skipped, or is running now."""
        now = self.clock()
        async with self.db.transaction() as sql:
            changed = await sql.run(
                "INSERT INTO job_runs (job, scope, period, started_at, status) "
                "VALUES (?, ?, ?, ?, 'running') ON CONFLICT (job, scope, period) DO UPDATE "
                "SET status = 'running', started_at = excluded.started_at, finished_at = NULL, "
                "error = '', attempts = job_runs.attempts + 1 WHERE job_runs.status = 'failed' "
                "OR (job_runs.status = 'running' AND job_runs.started_at < ?)",
                (job, scope, period, self.time(now), self.time(now - STALE_AFTER)),
            )
        return changed == 1

    async def finish(self, job: str, scope: str, period: str, status: str, error: str = "") -> None:
        async with self.db.transaction() as sql:
            await sql.run(
                "UPDATE job_runs SET status = ?, error = ?, finished_at = ? "
                "WHERE job = ? AND scope = ? AND period = ?",
                (status, error, self.time(self.clock()), job, scope, period),
            )

    async def record_skipped(self, job: str, scope: str, period: str, reason: str) -> bool:
        """Record a period that will not run (missed while down, past the grace window)."""
        now = self.time(self.clock())
        async with self.db.transaction() as sql:
            changed = await sql.run(
                "INSERT INTO job_runs (job, scope, period, started_at, finished_at, status, "
                "error) VALUES (?, ?, ?, ?, ?, 'skipped', ?) ON CONFLICT DO NOTHING",
                (job, scope, period, now, now, reason),
            )
        return changed == 1

    async def fetch(self, job: str, scope: str, period: str) -> JobRun | None:
        runs = await self._select(
            "WHERE job = ? AND scope = ? AND period = ?", (job, scope, period)
        )
        return runs[0] if runs else None

    async def fetch_last(
        self, job: str, scope: str | None = None, status: str | None = None
    ) -> JobRun | None:
        clauses, params = ["job = ?"], [job]
        if scope is not None:
            clauses.append("scope = ?")
            params.append(scope)
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        runs = await self._select(
            f"WHERE {' AND '.join(clauses)} ORDER BY period DESC, id DESC LIMIT 1", params
        )
        return runs[0] if runs else None

    async def fetch_failed(self, job: str) -> list[JobRun]:
        return await self._select("WHERE job = ? AND status = 'failed' ORDER BY id", (job,))

    async def fetch_recent(self, limit: int = 50) -> list[JobRun]:
        return await self._select("ORDER BY started_at DESC, id DESC LIMIT ?", (limit,))

    async def _select(self, where: str, params: Params) -> list[JobRun]:
        async with self.db.reading() as sql:
            found = await sql.rows(f"SELECT * FROM job_runs {where}", params)
        read_time = self.db.dialect.read_time
        return [
            JobRun(
                job=row["job"],
                scope=row["scope"],
                period=row["period"],
                status=row["status"],
                started_at=read_time(row["started_at"]) or self.clock(),
                finished_at=read_time(row["finished_at"]),
                error=row["error"],
                attempts=row["attempts"],
            )
            for row in found
        ]
