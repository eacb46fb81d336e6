"""Cron expressions read as cron(5) reads them, turned into APScheduler triggers.

APScheduler 3 numbers the days of the week from Monday = 0 (`CronTrigger.from_crontab`),
so `0 9 * * 1-5` would fire Tuesday to Saturday. lorebot reads the day-of-week field as
cron does (0 and 7 are Sunday, 1 is Monday, names `sun` to `sat`, ranges, lists and
steps) and hands APScheduler the days by name. As in cron, when both the day of the month
and the day of the week are restricted (neither starts with `*`), a day matching either
one fires.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # APScheduler is imported by the daemon, not by every command line
    from apscheduler.triggers.base import BaseTrigger

# cron's numbering: Sunday is 0 (and 7).
CRON_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
MONDAY_FIRST = (1, 2, 3, 4, 5, 6, 0)


@dataclass(frozen=True, slots=True)
class CronFields:
    """The five fields of a cron expression, the day of the week as a set of days."""

    minute: str
    hour: str
    day: str
    month: str
    weekday: str  # the field as written
    weekdays: frozenset[int]  # cron's numbers, Sunday = 0

    @property
    def any_weekday(self) -> bool:
        return self.weekday.startswith("*") or self.weekday == "?"

    @property
    def any_day(self) -> bool:
        return self.day.startswith("*") or self.day == "?"


def _day_number(word: str) -> int:
    if word.isdigit():
        number = int(word)
        if 0 <= number <= 7:
            return number
        raise ValueError(f"day of the week {word} is not 0-7 (0 and 7 are Sunday)")
    if word.lower() in CRON_DAYS:
        return CRON_DAYS.index(word.lower())
    raise ValueError(f"unknown day of the week {word!r} (use 0-7 or sun, mon, … sat)")


def _weekdays(field: str) -> frozenset[int]:
    days: set[int] = set()
    for part in field.split(","):
        span, _, step_text = part.partition("/")
        if step_text and not step_text.isdigit() or step_text == "0":
            raise ValueError(f"step {step_text!r} in {part!r} is not a positive number")
        step = int(step_text or 1)
        if span in ("*", "?"):
            first, last = 0, 6
        elif "-" in span:
            start, _, end = span.partition("-")
            first, last = _day_number(start), _day_number(end)
            if last < first:
                raise ValueError(f"range {span!r} ends before it starts")
        else:
            first = _day_number(span)
            last = 7 if step_text else first
        days.update(day % 7 for day in range(first, last + 1, step))
    return frozenset(days)


def parse_cron(expression: str) -> CronFields:
    """The fields of a five-field cron expression; ValueError saying what is wrong."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"wrong number of fields: got {len(fields)}, expected 5")
    minute, hour, day, month, weekday = fields
    return CronFields(minute, hour, day, month, weekday, _weekdays(weekday))


def _apscheduler_weekdays(fields: CronFields) -> str:
    if len(fields.weekdays) == 7:
        return "*"
    return ",".join(CRON_DAYS[day] for day in sorted(fields.weekdays))


def cron_trigger(expression: str, timezone: tzinfo | str) -> BaseTrigger:
    """The trigger that fires when cron would fire for `expression` in `timezone`."""
    from apscheduler.triggers.combining import OrTrigger
    from apscheduler.triggers.cron import CronTrigger

    fields = parse_cron(expression)

    def trigger(day: str, weekday: str) -> CronTrigger:
        return CronTrigger(
            minute=fields.minute,
            hour=fields.hour,
            day=day,
            month=fields.month,
            day_of_week=weekday,
            timezone=timezone,
        )

    weekdays = _apscheduler_weekdays(fields)
    if fields.any_day or fields.any_weekday:
        return trigger(fields.day, weekdays)
    return OrTrigger([trigger(fields.day, "*"), trigger("*", weekdays)])


def _runs(days: frozenset[int]) -> list[list[int]]:
    """The days in week order, Monday first, grouped into runs of consecutive days; a
    run may wrap past Sunday (Friday to Monday)."""
    order = list(MONDAY_FIRST)
    if 0 in days and 1 in days:  # a run through Sunday into Monday starts the list
        missing = max(i for i, day in enumerate(order) if day not in days)
        order = order[missing + 1 :] + order[: missing + 1]
    runs: list[list[int]] = []
    previous_in = False
    for day in order:
        if day in days:
            if previous_in:
                runs[-1].append(day)
            else:
                runs.append([day])
        previous_in = day in days
    return runs


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def describe_weekdays(days: frozenset[int]) -> str:
    """ "every day", "Monday to Friday", "Saturday and Sunday", "Monday and Thursday"."""
    if len(days) == 7:
        return "every day"
    parts: list[str] = []
    for run in _runs(days):
        if len(run) >= 3:
            parts.append(f"{DAY_NAMES[run[0]]} to {DAY_NAMES[run[-1]]}")
        else:
            parts.extend(DAY_NAMES[day] for day in run)
    return _join(parts)


def describe_days(expression: str) -> str:
    """The days a schedule runs on, in words, for `lorebot jobs list`."""
    fields = parse_cron(expression)
    weekdays = describe_weekdays(fields.weekdays)
    if fields.any_day:
        days = weekdays
    elif fields.any_weekday:
        days = f"day {fields.day} of the month"
    else:
        days = f"day {fields.day} of the month or {weekdays}"
    return days if fields.month in ("*", "?") else f"{days}, months {fields.month}"
