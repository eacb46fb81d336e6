"""`lorebot jobs list` and `lorebot jobs run NAME [--scope S]`."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from bot.cli.common import iso_z, print_json
from bot.errors import UserError

if TYPE_CHECKING:
    from adapters.base import Adapter
    from bot.config.settings import Settings
    from bot.daemon.app import Bot
    from memory.stores.job_runs import JobRun


def add_parser(commands: Any) -> None:
    jobs = commands.add_parser("jobs", help="list scheduled jobs or run one now")
    sub = jobs.add_subparsers(title="jobs commands", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="each job's schedule, next run and last outcome")
    p.add_argument(
        "--json",
        action="store_true",
        help='print a JSON array, one object per schedule: job, scope ("all", or a '
        "digest's channel), cron, timezone, next_run, last_run (status, period, at, detail; "
        "null if it never ran), days (the days it runs, in words, with cron's numbering: "
        '0 and 7 are Sunday); each of jobs.digests is a "digest" schedule',
    )
    p.set_defaults(command=cmd_list)
    p = sub.add_parser("run", help="run a job now (a period that already ran is not repeated)")
    p.add_argument("name", help="reflection, patterns, digest or maintenance")
    p.add_argument("--scope", help="only this scope (a conversation, or a digest's channel)")
    p.set_defaults(command=cmd_run)


def _offline_bot(settings: Settings, adapters: list[Adapter]) -> Bot:
    from bot.daemon.app import Bot

    quiet = settings.model_copy(
        update={"jobs": settings.jobs.model_copy(update={"enabled": False})}
    )
    return Bot(quiet, adapters, daemon=False)


class _Schedule(NamedTuple):
    """One line of `jobs list`: a job's schedule in one scope, its next and last run."""

    job: str
    scope: str
    cron: str
    next_run: datetime | None
    last: JobRun | None


async def _schedules(bot: Bot) -> list[_Schedule]:
    from bot.jobs.runner import ALL

    now = bot.clock()
    found = []
    for job in bot.jobs.jobs.values():
        for scope, cron in job.schedules():
            next_run = bot.jobs.trigger(cron).get_next_fire_time(None, now)
            last = await bot.jobs.runs.fetch_last(job.name, None if scope == ALL else scope)
            found.append(_Schedule(job.name, scope, cron, next_run, last))
    return found


def _last_json(last: JobRun | None) -> dict[str, Any] | None:
    if last is None:
        return None
    return {
        "status": last.status,
        "period": last.period,
        "at": iso_z(last.finished_at or last.started_at),
        "detail": last.error,
    }


def _schedule_json(schedule: _Schedule, timezone: str) -> dict[str, Any]:
    from bot.cron import describe_days

    return {
        "job": schedule.job,
        "scope": schedule.scope,
        "cron": schedule.cron,
        "days": describe_days(schedule.cron),
        "timezone": timezone,
        "next_run": iso_z(schedule.next_run),
        "last_run": _last_json(schedule.last),
    }


def _schedule_line(schedule: _Schedule, timezone: str) -> str:
    from bot.cron import describe_days
    from bot.jobs.runner import ALL

    last = schedule.last
    outcome = "never ran"
    if last is not None:
        outcome = f"last {last.period} {last.status}" + (
            f" ({last.error})" if last.error and last.status != "succeeded" else ""
        )
    where = "" if schedule.scope == ALL else f" {schedule.scope}"
    when = f"{schedule.next_run:%Y-%m-%d %H:%M %Z}" if schedule.next_run else "never"
    days = describe_days(schedule.cron)
    return f"{schedule.job}{where}  [{schedule.cron} {timezone}, {days}]  next {when}  {outcome}"


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    async with _offline_bot(settings, []) as bot:
        schedules = await _schedules(bot)
    timezone = settings.jobs.timezone
    if args.json:
        print_json([_schedule_json(s, timezone) for s in schedules])
        return 0
    for schedule in schedules:
        print(_schedule_line(schedule, timezone))
    if not settings.jobs.digests:
        print("digest: no channels configured (jobs.digests)")
    return 0


async def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from adapters.console.adapter import ConsoleAdapter
    from bot.daemon.wiring import build_adapters
    from bot.jobs.runner import ALL, period_of

    adapters = [*build_adapters(settings), ConsoleAdapter("operator", "jobs")]
    async with _offline_bot(settings, adapters) as bot:
        job = bot.jobs.jobs.get(args.name)
        if job is None:
            raise UserError(f"unknown job {args.name!r}: use one of {', '.join(bot.jobs.jobs)}")
        fire_time = bot.clock()
        schedule_scopes = [s for s, _ in job.schedules()] or [ALL]
        if args.scope and args.name == "digest":
            # A digest posts in a channel: only in one that jobs.digests names.
            if args.scope not in schedule_scopes:
                configured = ", ".join(schedule_scopes) if job.schedules() else "none"
                raise UserError(
                    f"no digest is configured for {args.scope} in jobs.digests "
                    f"(configured: {configured})"
                )
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
