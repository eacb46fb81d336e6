"""Cron expressions fire on the days cron(5) would fire them, whatever APScheduler's own
numbering, in the configured zone and across its DST changes."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from bot.config.sections import DigestSettings
from bot.cron import cron_trigger, describe_days
from bot.jobs.runner import previous_fire_time

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")
FRIDAY_EVENING = datetime(2026, 12, 4, 19, 30, tzinfo=BERLIN)
SUNDAY = datetime(2026, 12, 6, 12, 0, tzinfo=BERLIN)


def fire_days(expression: str, start: datetime = FRIDAY_EVENING, weeks: int = 2) -> set[str]:
    """The names of the days `expression` fires on during `weeks` from `start`."""
    trigger = cron_trigger(expression, BERLIN)
    found: set[str] = set()
    moment = trigger.get_next_fire_time(None, start)
    while moment is not None and moment < start + timedelta(weeks=weeks):
        found.add(f"{moment.astimezone(BERLIN):%a}")
        moment = trigger.get_next_fire_time(moment, moment + timedelta(minutes=1))
    return found


WEEKDAYS = {"Mon", "Tue", "Wed", "Thu", "Fri"}


@pytest.mark.parametrize("start", [FRIDAY_EVENING, SUNDAY], ids=["friday-evening", "sunday"])
def test_a_weekday_schedule_next_fires_on_monday_morning(start: datetime) -> None:
    trigger = cron_trigger("0 9 * * 1-5", BERLIN)

    assert trigger.get_next_fire_time(None, start) == datetime(2026, 12, 7, 9, 0, tzinfo=BERLIN)


@pytest.mark.parametrize(
    ("expression", "days"),
    [
        ("0 9 * * 1-5", WEEKDAYS),
        ("0 9 * * mon-fri", WEEKDAYS),
        ("0 9 * * MON,TUE,wed,thu,Fri", WEEKDAYS),
        ("0 9 * * 0", {"Sun"}),
        ("0 9 * * 7", {"Sun"}),
        ("0 9 * * sun", {"Sun"}),
        ("0 9 * * 6,0", {"Sat", "Sun"}),
        ("0 9 * * 5-7", {"Fri", "Sat", "Sun"}),
        ("0 9 * * 0-6", WEEKDAYS | {"Sat", "Sun"}),
        ("0 9 * * */2", {"Sun", "Tue", "Thu", "Sat"}),
        ("0 9 * * 1-5/2", {"Mon", "Wed", "Fri"}),
        ("0 9 * * 1/3", {"Mon", "Thu", "Sun"}),
        ("0 9 * * *", WEEKDAYS | {"Sat", "Sun"}),
    ],
)
def test_the_day_of_the_week_is_read_as_cron_reads_it(expression: str, days: set[str]) -> None:
    assert fire_days(expression) == days


def test_a_restricted_day_of_month_and_weekday_fire_on_either_as_in_cron() -> None:
    trigger = cron_trigger("0 9 1 * 1", UTC)
    start = datetime(2026, 11, 28, tzinfo=UTC)  # a Saturday
    fired = []
    moment = trigger.get_next_fire_time(None, start)
    while moment is not None and len(fired) < 3:
        fired.append(moment.date().isoformat())
        moment = trigger.get_next_fire_time(moment, moment + timedelta(minutes=1))

    # Monday the 30th, Tuesday the 1st (the day of the month), Monday the 7th.
    assert fired == ["2026-11-30", "2026-12-01", "2026-12-07"]


def test_a_step_in_the_day_of_month_keeps_the_weekday_a_restriction() -> None:
    # Cron reads a field that starts with `*` as "any", so the two fields both apply.
    assert fire_days("0 9 */2 * 1-5", weeks=4) <= WEEKDAYS


def test_the_wall_clock_time_holds_across_a_dst_change() -> None:
    trigger = cron_trigger("0 9 * * 1-5", BERLIN)
    friday = datetime(2026, 10, 23, 9, 0, tzinfo=BERLIN)  # CEST, UTC+2

    monday = trigger.get_next_fire_time(friday, friday + timedelta(minutes=1))

    assert monday is not None
    assert monday == datetime(2026, 10, 26, 9, 0, tzinfo=BERLIN)
    assert monday.astimezone(UTC).hour == 8  # CET, UTC+1 since Sunday the 25th
    assert previous_fire_time(trigger, monday + timedelta(hours=1)) == monday


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 9 * * 1-5", "Monday to Friday"),
        ("30 23 * * *", "every day"),
        ("0 9 * * 0,6", "Saturday and Sunday"),
        ("0 9 * * 5-7", "Friday to Sunday"),
        ("0 9 * * 1,4", "Monday and Thursday"),
        ("0 9 * * 0-2", "Sunday to Tuesday"),
        ("0 9 * * 5-7,1", "Friday to Monday"),
        ("0 9 * * 1,3,5", "Monday, Wednesday and Friday"),
        ("0 9 1 * *", "day 1 of the month"),
        ("0 9 1,15 * 1", "day 1,15 of the month or Monday"),
        ("0 9 * 1-6 1-5", "Monday to Friday, months 1-6"),
    ],
)
def test_the_days_of_a_schedule_are_said_in_words(expression: str, words: str) -> None:
    assert describe_days(expression) == words


@pytest.mark.parametrize(
    ("expression", "complaint"),
    [
        ("0 9 * * 8", "day of the week 8 is not 0-7"),
        ("0 9 * * 5-1", "range '5-1' ends before it starts"),
        ("0 9 * * funday", "unknown day of the week 'funday'"),
        ("0 9 * * 1/0", "is not a positive number"),
        ("0 9 * *", "expected 5"),
        ("61 9 * * *", "minute"),
    ],
)
def test_a_wrong_cron_expression_in_settings_says_what_is_wrong(
    expression: str, complaint: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        DigestSettings(channel="channel:slack/C1", cron=expression)

    message = str(caught.value)
    assert complaint in message and "is not a cron expression" in message
