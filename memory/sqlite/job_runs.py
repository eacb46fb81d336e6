"""Job runs under an idempotency key (job, scope, period): a period runs once; a failed one
can be claimed again; a run left `running` by a crash is reclaimed after a while."""

from __future__ import annotations

from memory.clock import Clock, utc_now
from memory.job_runs import STALE_AFTER, JobRun
from memory.sqlite.database import SqliteDatabase, from_db_time, to_db_time


class SqliteJobRuns:
    """The `job_runs` table."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def claim(self, job: str, scope: str, period: str) -> bool:
        """Start a run of this period unless it succeeded, was skipped, or is running now."""
        now = self.clock()
        stale = to_db_time(now - STALE_AFTER)
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO job_runs (job, scope, period, started_at, status) "
                "VALUES (?, ?, ?, ?, 'running') ON CONFLICT (job, scope, period) DO UPDATE SET "
                "status = 'running', started_at = excluded.started_at, finished_at = NULL, "
                "error = '', attempts = attempts + 1 "
                "WHERE status = 'failed' OR (status = 'running' AND started_at < ?)",
                (job, scope, period, to_db_time(now), stale),
            )
        return cursor.rowcount == 1

    async def finish(self, job: str, scope: str, period: str, status: str, error: str = "") -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE job_runs SET status = ?, error = ?, finished_at = ? "
                "WHERE job = ? AND scope = ? AND period = ?",
                (status, error, to_db_time(self.clock()), job, scope, period),
            )

    async def record_skipped(self, job: str, scope: str, period: str, reason: str) -> bool:
        """Record a period that will not run (missed while down, past the grace window)."""
        now = to_db_time(self.clock())
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT OR IGNORE INTO job_runs (job, scope, period, started_at, finished_at, "
                "status, error) VALUES (?, ?, ?, ?, ?, 'skipped', ?)",
                (job, scope, period, now, now, reason),
            )
        return cursor.rowcount == 1

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
            f"WHERE {' AND '.join(clauses)} ORDER BY period DESC, id DESC LIMIT 1", tuple(params)
        )
        return runs[0] if runs else None

    async def fetch_failed(self, job: str) -> list[JobRun]:
        return await self._select("WHERE job = ? AND status = 'failed' ORDER BY id", (job,))

    async def _select(self, where: str, params: tuple[object, ...]) -> list[JobRun]:
        async with self.db.conn.execute(f"SELECT * FROM job_runs {where}", params) as cursor:
            rows = await cursor.fetchall()
        return [
            JobRun(
                job=r["job"], scope=r["scope"], period=r["period"], status=r["status"],
                started_at=from_db_time(r["started_at"]) or self.clock(),
                finished_at=from_db_time(r["finished_at"]), error=r["error"],
                attempts=r["attempts"],
            )
            for r in rows
        ]  # fmt: skip
