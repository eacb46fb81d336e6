"""Hourly maintenance: expire proposals, purge what is past its TTL, checkpoint the WAL,
and keep daily online backups when a backup folder is configured."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot import backups
from bot.jobs.context import JobContext
from bot.jobs.runner import ALL


class MaintenanceJob:
    name = "maintenance"
    catch_up = False

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    def schedules(self) -> list[tuple[str, str]]:
        return [(ALL, self.ctx.settings.maintenance_cron)]

    async def scopes(self, schedule_scope: str, fire_time: datetime) -> list[str]:
        return [ALL]

    async def run(self, scope: str, fire_time: datetime) -> str:
        expired = await self.ctx.approvals.expire()
        purged = await self.ctx.notes.purge_expired()
        forgotten = await self.ctx.seen.forget_seen_before(timedelta(days=1))
        stale = await self.ctx.inbox.forget_taken_before(timedelta(days=1))
        wal = (
            ""
            if await self.ctx.notes.db.checkpoint()
            else ", WAL checkpoint left for the next run (busy)"
        )
        backup = await self.backup(fire_time)
        waited = f", dropped {stale} events waiting over a day" if stale else ""
        return (
            f"expired {expired} proposals, purged {purged} notes, dropped {forgotten} "
            f"event ids{waited}{wal}{backup}"
        )

    async def backup(self, fire_time: datetime) -> str:
        folder = self.ctx.settings.backup_dir
        if folder is None:
            return ""
        target = folder / backups.daily_name(fire_time)
        if target.exists():
            return ""
        await self.ctx.notes.db.backup_to(target)
        backups.prune(folder, self.ctx.settings.backup_keep)
        return f", backed up to {target}"
