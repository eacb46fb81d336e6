"""`lorebot jobs list` and `lorebot jobs run NAME [--scope S]`."""

from __future__ import annotations

import argparse
from typing import Any

from adapters.base import Adapter
from adapters.console import ConsoleAdapter
from bot.app import Bot
from bot.config import Settings
from bot.errors import UserError
from bot.jobs.runner import ALL, period_of
from bot.wiring import build_adapters


def add_parser(commands: Any) -> None:
    jobs = commands.add_parser("jobs", help="list scheduled jobs or run one now")
    sub = jobs.add_subparsers(title="jobs commands", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="each job's schedule, next run and last outcome")
    p.set_defaults(command=cmd_list)
    p = sub.add_parser("run", help="run a job now (a period that already ran is not repeated)")
    p.add_argument("name", help="reflection, patterns, digest or maintenance")
    p.add_argument("--scope", help="only this scope (a conversation, or a digest's channel)")
    p.set_defaults(command=cmd_run)


def _offline_bot(settings: Settings, adapters: list[Adapter]) -> Bot:
    quiet = settings.model_copy(
        update={"jobs": settings.jobs.model_copy(update={"enabled": False})}
    )
    return Bot(quiet, adapters, daemon=False)


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    async with _offline_bot(settings, []) as bot:
        now = bot.clock()
        for job in bot.jobs.jobs.values():
            for scope, cron in job.schedules():
                next_run = bot.jobs.trigger(cron).get_next_fire_time(None, now)
                last = await bot.jobs.runs.last(job.name, None if scope == ALL else scope)
                outcome = "never ran"
                if last is not None:
                    outcome = f"last {last.period} {last.status}" + (
                        f" ({last.error})" if last.error and last.status != "succeeded" else ""
                    )
                where = "" if scope == ALL else f" {scope}"
                when = f"{next_run:%Y-%m-%d %H:%M %Z}" if next_run else "never"
                print(
                    f"{job.name}{where}  [{cron} {settings.jobs.timezone}]  next {when}  {outcome}"
                )
        if not settings.jobs.digests:
            print("digest: no channels configured (jobs.digests)")
    return 0


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    adapters = [*build_adapters(settings), ConsoleAdapter("operator", "jobs")]
    async with _offline_bot(settings, adapters) as bot:
        job = bot.jobs.jobs.get(args.name)
        if job is None:
            raise UserError(f"unknown job {args.name!r}: use one of {', '.join(bot.jobs.jobs)}")
        fire_time = bot.clock()
        schedule_scopes = [s for s, _ in job.schedules()] or [ALL]
        if args.scope and args.name == "digest":
            schedule_scopes = [args.scope]
        results = []
        for schedule_scope in schedule_scopes:
            for scope in await job.scopes(schedule_scope, fire_time):
                if args.scope and scope != args.scope:
                    continue
                results.append(await bot.jobs.run(job, scope, fire_time))
    if not results:
        print(f"{args.name}: nothing to do for period {period_of(fire_time)}")
    for result in results:
        detail = f": {result.detail}" if result.detail else ""
        print(f"{result.job} {result.scope} {result.period} {result.status}{detail}")
    return 1 if any(r.status == "failed" for r in results) else 0
