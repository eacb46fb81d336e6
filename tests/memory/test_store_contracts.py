"""The bookkeeping stores keep their promises on both engines: seen events drop a retry
from any process, a job period runs once also when two claim it together, logs, skills,
slips, live replies and captured events read back as written (secrets redacted)."""

from __future__ import annotations

import asyncio
from datetime import date, timedelta
from typing import Any

from memory.stores.job_runs import STALE_AFTER
from memory.stores.slips import KEEP_FOR
from tests.support.clock import FakeClock
from tests.support.engines import OpenAgain


async def test_an_event_seen_by_one_process_is_a_retry_for_another(
    engine_stores: Any, open_again: OpenAgain, clock: FakeClock
) -> None:
    other = await open_again()
    assert await engine_stores.seen.first_sighting("slack:Ev1") is True
    assert await other.seen.first_sighting("slack:Ev1") is False
    assert await other.seen.seen("slack:Ev1") and not await other.seen.seen("slack:Ev2")
    await other.seen.forget_sighting("slack:Ev1")
    assert await engine_stores.seen.first_sighting("slack:Ev1") is True
    clock.advance(days=2)
    await engine_stores.seen.first_sighting("slack:Ev3")
    assert await engine_stores.seen.forget_seen_before(timedelta(days=1)) == 1
    assert not await engine_stores.seen.seen("slack:Ev1")
    assert await engine_stores.seen.seen("slack:Ev3")


async def test_two_processes_claiming_one_period_together_run_it_once(
    engine_stores: Any, open_again: OpenAgain
) -> None:
    others = [await open_again() for _ in range(3)]
    claims = await asyncio.gather(
        *(s.job_runs.claim("digest", "channel:slack/T1/C1", "2026-11-02") for s in others)
    )
    assert sorted(claims) == [False, False, True]
    run = await engine_stores.job_runs.fetch("digest", "channel:slack/T1/C1", "2026-11-02")
    assert (run.status, run.attempts) == ("running", 1)


async def test_a_failed_or_stale_run_is_claimed_again_and_a_finished_one_never(
    engine_stores: Any, clock: FakeClock
) -> None:
    runs = engine_stores.job_runs
    assert await runs.claim("reflect", "s", "p1")
    await runs.finish("reflect", "s", "p1", "failed", "model unreachable")
    [failed] = await runs.fetch_failed("reflect")
    assert (failed.period, failed.error, failed.finished_at) == ("p1", "model unreachable", clock())
    assert await runs.claim("reflect", "s", "p1")
    assert (await runs.fetch("reflect", "s", "p1")).attempts == 2
    assert not await runs.claim("reflect", "s", "p1")  # running now
    clock.advance(seconds=STALE_AFTER.total_seconds() + 1)
    assert await runs.claim("reflect", "s", "p1")  # left running by a crash
    await runs.finish("reflect", "s", "p1", "succeeded")
    assert not await runs.claim("reflect", "s", "p1")
    assert await runs.record_skipped("reflect", "s", "p0", "missed while down")
    assert not await runs.record_skipped("reflect", "s", "p0", "again")
    last = await runs.fetch_last("reflect", "s")
    assert (last.period, last.status, last.started_at) == ("p1", "succeeded", clock())
    assert (await runs.fetch_last("reflect", status="skipped")).error == "missed while down"
    assert await runs.fetch_last("digest") is None


async def test_daily_logs_and_active_skills_read_back_as_last_written(
    engine_stores: Any,
) -> None:
    logs = engine_stores.daily_logs
    await logs.write("slack/T1/C1", date(2026, 11, 1), "first")
    await logs.write("slack/T1/C1", date(2026, 11, 1), "replaced")
    await logs.write("slack/T1/C1", date(2026, 11, 2), "second")
    await logs.write("slack/T1/C2", date(2026, 11, 2), "another channel")
    days = [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]
    assert await logs.fetch("slack/T1/C1", days) == {
        date(2026, 11, 1): "replaced",
        date(2026, 11, 2): "second",
    }
    skills = engine_stores.active_skills
    await skills.activate("slack/T1/C1", "weather", "a" * 64, "user:slack/U1")
    await skills.activate("slack/T1/C1", "deploy", "b" * 64, "user:slack/U1")
    await skills.activate("slack/T1/C1", "weather", "c" * 64, "user:slack/U2")
    assert await skills.fetch("slack/T1/C1") == {"deploy": "b" * 64, "weather": "c" * 64}
    assert await skills.fetch("slack/T1/C2") == {}


async def test_slips_are_counted_by_kind_and_old_ones_dropped(
    engine_stores: Any, clock: FakeClock
) -> None:
    slips = engine_stores.slips
    start = clock()
    await slips.record("empty", "slack/T1/C1")
    clock.advance(hours=1)
    await slips.record("empty", "slack/T1/C1")
    await slips.record("intent", "slack/T1/C2")
    assert await slips.fetch_counts_since(start) == {"empty": 2, "intent": 1}
    assert await slips.fetch_counts_since(clock()) == {"empty": 1, "intent": 1}
    clock.advance(seconds=KEEP_FOR.total_seconds() + 1)
    await slips.record("repeated call", "slack/T1/C1")
    assert await slips.fetch_counts_since(start - timedelta(days=365)) == {"repeated call": 1}


async def test_a_live_reply_reads_back_until_it_is_done(engine_stores: Any) -> None:
    replies = engine_stores.live_replies
    where = {"platform": "slack", "channel_id": "C1", "thread_id": "1.1", "ünï": "cødé"}
    await replies.record("slack", where, "1700000003.000003", "The staging")
    await replies.record("slack", where, "1700000003.000003", "The staging DB is db-2")
    await replies.record("discord", {"channel_id": "9"}, "42", "Hi")
    [row] = await replies.fetch_unfinished("slack")
    assert (row.conversation, row.message_id, row.shown) == (
        where,
        "1700000003.000003",
        "The staging DB is db-2",
    )
    await replies.done("slack", "1700000003.000003")
    assert await replies.fetch_unfinished("slack") == []
    assert len(await replies.fetch_unfinished("discord")) == 1


async def test_captured_events_are_stored_once_without_their_secrets(
    engine: str, database_at: Any, clock: FakeClock
) -> None:
    from memory.stores.stores import StoreOptions
    from tests.support.engines import open_engine

    stores = await open_engine(
        engine, database_at, StoreOptions(clock=clock, secrets=("sk-live-0123456789",))
    )
    try:
        events = stores.events
        arguments = {"service": "web", "token": "sk-live-0123456789"}
        where = {"platform": "slack", "channel_id": "C1"}
        kept = await events.capture(
            "deploy_service",
            arguments,
            outcome="deployed with sk-live-0123456789",
            conversation=where,
            channel_scope="channel:slack/T1/C1",
            person="user:slack/U1",
        )
        again = await events.capture(
            "deploy_service",
            arguments,
            outcome="deployed",
            conversation=where,
            channel_scope="channel:slack/T1/C1",
            person="user:slack/U2",
        )
        assert (kept, again) == (True, False)
        [event] = await events.fetch_since(clock() - timedelta(minutes=1))
        assert event.arguments["service"] == "web"
        assert "sk-live-0123456789" not in repr(event)
        assert (event.conversation, event.created_at) == (where, clock())
        assert await events.fetch_since(clock() + timedelta(seconds=1)) == []
        assert not await events.has_pattern("deploy_service", "channel:slack/T1/C1")
        await events.mark_pattern("deploy_service", "channel:slack/T1/C1", 7)
        await events.mark_pattern("deploy_service", "channel:slack/T1/C1", 8)
        assert await events.has_pattern("deploy_service", "channel:slack/T1/C1")
    finally:
        await stores.close()
