"""Scheduled jobs with an injected clock: periods, idempotency, catch-up, and each job's work."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adapters.base import APPROVE
from bot.cron import cron_trigger
from bot.jobs.runner import previous_fire_time
from memory import Category, NoteDraft, Scope
from tests.fakes.adapter import PLATFORM, RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.polling import HANG_GUARD_S

CHANNEL = Scope.parse(f"channel:{PLATFORM}/C1")
DIGESTS: dict[str, Any] = {"digests": [{"channel": str(CHANNEL), "cron": "0 9 * * *"}]}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def jobs_harness(
    tmp_path: Path,
    fake: FakeOllama,
    clock: FakeClock,
    adapter: RecordingAdapter | None = None,
    **jobs: Any,
) -> Harness:
    return await start_harness(tmp_path, fake, clock, adapter, jobs={**DIGESTS, **jobs})


def digests(h: Harness) -> list[str]:
    return [s.text for s in h.adapter.sent if s.text.startswith("📰 Digest")]


def test_cron_times_follow_the_configured_timezone() -> None:
    berlin = cron_trigger("30 23 * * *", "Europe/Berlin")
    assert berlin.get_next_fire_time(None, at("2026-11-02T09:00:00")) == at("2026-11-02T22:30:00")
    # Across the DST change the wall-clock time holds, the UTC time moves.
    assert berlin.get_next_fire_time(None, at("2026-07-02T09:00:00")) == at("2026-07-02T21:30:00")
    hourly = cron_trigger("5 * * * *", "UTC")
    assert previous_fire_time(hourly, at("2026-11-02T09:04:00")) == at("2026-11-02T08:05:00")
    assert previous_fire_time(hourly, at("2026-11-02T09:05:00")) == at("2026-11-02T09:05:00")


async def test_digest_posts_changes_of_its_period_once_even_after_a_restart(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    first = await jobs_harness(tmp_path, fake_ollama, clock)
    await first.bot.notes.save(
        NoteDraft(CHANNEL, "deploy-day", "we deploy on tuesdays", category=Category.DECISION),
        actor="user:test/UALICE",
    )
    await first.say("remember that the VPN is vpn-2")  # stays open: listed as waiting
    fake_ollama.reply("One decision was made.")
    fire = at("2026-11-02T09:00:00")
    clock.now = fire
    [result] = await first.bot.jobs.fire(first.bot.jobs.jobs["digest"], str(CHANNEL), "0 9 * * *")
    assert result.status == "succeeded"
    [digest] = digests(first)
    assert "decision (new): `deploy-day` — we deploy on tuesdays" in digest
    assert "waiting for a decision: proposal #1" in digest
    assert "One decision was made." in digest
    await first.bot.stop()

    second = await jobs_harness(tmp_path, fake_ollama, clock, first.adapter)
    try:
        [again] = await second.bot.jobs.fire(
            second.bot.jobs.jobs["digest"], str(CHANNEL), "0 9 * * *"
        )
        assert again.status == "already-done"
        assert len(digests(second)) == 1
    finally:
        await second.bot.stop()


async def test_the_next_digest_starts_where_the_last_ended(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    job = h.bot.jobs.jobs["digest"]
    try:
        await h.bot.notes.save(NoteDraft(CHANNEL, "old-news", "before the first"), actor="a")
        await h.bot.jobs.run(job, str(CHANNEL), at("2026-11-02T09:00:00"))
        clock.now = at("2026-11-02T12:00:00")
        await h.bot.notes.save(NoteDraft(CHANNEL, "fresh", "after the first"), actor="a")
        await h.bot.jobs.run(job, str(CHANNEL), at("2026-11-03T09:00:00"))
        first, second = digests(h)
        assert "old-news" in first and "fresh" not in first
        assert "fresh" in second and "old-news" not in second
        assert second.startswith("📰 Digest since 2026-11-02 09:00 UTC")
    finally:
        await h.bot.stop()


async def test_digest_works_without_the_model(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        await fake_ollama.down()
        await h.bot.notes.save(NoteDraft(CHANNEL, "fact", "a fact"), actor="a")
        clock.advance(minutes=1)
        result = await h.bot.jobs.run(h.bot.jobs.jobs["digest"], str(CHANNEL), clock.now)
        assert result.status == "succeeded"
        assert "`fact` — a fact" in digests(h)[0]
    finally:
        await h.bot.stop()


async def test_missed_runs_follow_each_jobs_policy(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:30:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(CHANNEL, "fact", "a fact"), actor="a")
        clock.now = at("2026-11-02T10:30:00")  # the 09:00 digest was missed 1.5 h ago
        results = await h.bot.jobs.catch_up()
        assert ("digest", "succeeded") in {(r.job, r.status) for r in results}
        assert len(digests(h)) == 1
        maintenance = await h.bot.jobs.runs.fetch_last("maintenance")
        assert maintenance is not None and maintenance.status == "skipped"
        assert maintenance.period == "2026-11-02T10:05Z"
        assert "missed" in maintenance.error

        await h.bot.jobs.catch_up()  # a second start changes nothing
        assert len(digests(h)) == 1
    finally:
        await h.bot.stop()


async def test_a_run_missed_past_the_grace_window_is_recorded_as_skipped(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T20:00:00")  # the 09:00 digest is 11 h late
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.jobs.catch_up()
        assert digests(h) == []
        run = await h.bot.jobs.runs.fetch("digest", str(CHANNEL), "2026-11-02T09:00Z")
        assert run is not None and run.status == "skipped"
    finally:
        await h.bot.stop()


async def test_runs_of_one_job_never_overlap(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(CHANNEL, "fact", "a fact"), actor="a")
        clock.advance(minutes=1)
        fake_ollama.delay(0.2)
        job = h.bot.jobs.jobs["digest"]
        results = await asyncio.gather(
            h.bot.jobs.run(job, str(CHANNEL), clock.now),
            h.bot.jobs.run(job, str(CHANNEL), clock.now),
        )
        assert sorted(r.status for r in results) == ["already-done", "succeeded"]
        assert len(digests(h)) == 1
    finally:
        await h.bot.stop()


async def test_approved_changes_are_captured_once_with_secrets_redacted(harness: Harness) -> None:
    await harness.say("remember that the backup host is bk-1")
    await harness.react(harness.adapter.cards[0], APPROVE)
    [event] = await harness.bot.events.fetch_since(harness.clock.now - timedelta(days=1))
    assert event.action == "note_save" and event.person == "user:test/UALICE"
    assert event.channel_scope == "channel:test/C1" and event.outcome == "created"

    stored = await harness.bot.events.capture(
        "deploy_service",
        {"name": "api", "env": "DB_PASSWORD=hunter22"},
        outcome="ok",
        conversation={},
        channel_scope=None,
        person="user:test/UALICE",
    )
    again = await harness.bot.events.capture(
        "deploy_service",
        {"name": "api", "env": "DB_PASSWORD=hunter22"},
        outcome="ok",
        conversation={},
        channel_scope=None,
        person="user:test/UALICE",
    )
    assert (stored, again) == (True, False)
    events = await harness.bot.events.fetch_since(harness.clock.now - timedelta(days=1))
    assert "hunter22" not in json.dumps([e.arguments for e in events])


def reflection_reply(fake: FakeOllama, log: str, lessons: list[str]) -> None:
    fake.reply(json.dumps({"log": log, "lessons": lessons}))


async def test_reflection_writes_the_daily_log_and_expiring_lessons(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T10:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("Use the green pipeline.")
        await h.say("how do we release the billing service?")
        reflection = h.bot.jobs.jobs["reflection"]
        fire = at("2026-11-02T23:30:00")
        scopes = await reflection.scopes("all", fire)
        assert scopes == ["test/C1/"]
        reflection_reply(
            fake_ollama,
            "Alice asked how to release billing.",
            ["Billing releases go through the green pipeline"],
        )
        clock.now = fire
        [result] = await h.bot.jobs.run_period(reflection, "all", fire)
        assert result.status == "succeeded"
        [lesson] = [n for n in await h.bot.notes.list_notes() if n.category is Category.REFLECTION]
        assert lesson.scope == CHANNEL and lesson.expires_at == fire + timedelta(days=30)

        fake_ollama.reply("Noted.")
        await h.say("what about the billing release pipeline?")
        prompt = h.last_prompt()
        assert "Alice asked how to release billing." in prompt[0]["content"]  # today's log
        assert "green pipeline" in prompt[-1]["content"]  # the lesson, next to the question

        fake_ollama.reply("Lunch is at noon.")
        await h.say("when is lunch served in the canteen?")
        assert "<relevant-memories>" not in h.last_prompt()[-1]["content"]

        clock.advance(days=31)
        assert await h.bot.notes.purge_expired() == 1
    finally:
        await h.bot.stop()


async def test_reflection_with_the_model_down_or_confused_changes_nothing_and_retries(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("Sure.")
        await h.say("hello there")
        reflection = h.bot.jobs.jobs["reflection"]
        fire = clock.now + timedelta(minutes=5)
        fake_ollama.reply("not json")
        fake_ollama.reply("still not json")
        [failed] = await h.bot.jobs.run_period(reflection, "all", fire)
        assert failed.status == "failed" and "did not fit" in failed.detail
        assert await h.bot.notes.list_notes() == []
        assert await h.bot.daily_logs.fetch("test/C1/", [fire.date()]) == {}

        reflection_reply(fake_ollama, "A greeting.", [])
        [retried] = await h.bot.jobs.run_period(reflection, "all", fire)
        assert retried.status == "succeeded"
        run = await h.bot.jobs.runs.fetch("reflection", "test/C1/", retried.period)
        assert run is not None and run.attempts == 2
        assert await h.bot.daily_logs.fetch("test/C1/", [fire.date()]) == {
            fire.date(): "A greeting."
        }
    finally:
        await h.bot.stop()


async def capture_many(h: Harness, count: int) -> None:
    conversation = {
        "platform": PLATFORM,
        "channel_id": "C1",
        "is_dm": False,
        "thread_id": None,
        "team_id": "T1",
    }
    for n in range(count):
        await h.bot.events.capture(
            "register_service",
            {"name": f"svc-{n}", "port": 8000 + n},
            outcome="ok",
            conversation=conversation,
            channel_scope=str(CHANNEL),
            person="user:test/UALICE",
        )


async def test_patterns_need_min_samples_then_become_an_approved_channel_note(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock, min_samples=5)
    patterns = h.bot.jobs.jobs["patterns"]
    try:
        await capture_many(h, 4)
        [result] = await h.bot.jobs.run_period(patterns, "all", clock.now)
        assert result.detail == "nothing new" and h.adapter.cards == []

        await capture_many(h, 6)  # two more distinct events
        fake_ollama.reply(
            json.dumps(
                {
                    "topic": "service registration",
                    "summary": "services are named svc-N on port 8000+N",
                    "details": "- name: svc-N\n- port: 8000 + N",
                }
            )
        )
        clock.advance(hours=1)
        [result] = await h.bot.jobs.run_period(patterns, "all", clock.now)
        [card] = h.adapter.cards
        assert "pattern-service-registration" in card.text
        assert "Evidence: 6 `register_service` actions" in card.text
        await h.react(card, APPROVE)
        [note] = await h.bot.notes.list_notes()
        assert (note.scope, note.category) == (CHANNEL, Category.PATTERN)

        clock.advance(hours=1)
        [again] = await h.bot.jobs.run_period(patterns, "all", clock.now)
        assert again.detail == "nothing new" and len(h.adapter.cards) == 1
    finally:
        await h.bot.stop()


async def test_maintenance_expires_cards_and_keeps_n_backups(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock, backup_dir=tmp_path / "bk", backup_keep=2)
    maintenance = h.bot.jobs.jobs["maintenance"]
    try:
        await h.say("remember that the printer is on floor 2")
        for _ in range(3):
            clock.advance(days=1)
            await h.bot.jobs.run(maintenance, "all", clock.now)
        assert h.adapter.cards[0].current.startswith("⌛ Expired")
        backups = sorted(p.name for p in (tmp_path / "bk").iterdir())
        assert backups == ["lorebot-2026-11-04.db", "lorebot-2026-11-05.db"]
    finally:
        await h.bot.stop()


async def test_a_shutdown_stops_a_run_waiting_on_the_model_and_the_period_runs_again(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    """Whoever started the run (a catch-up here, which nothing else cancels), shutting the
    jobs down never waits on the model; the period is kept to run again."""
    clock.now = at("2026-11-02T08:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(CHANNEL, "deploy-day", "we deploy on tuesdays"), actor="a")
        clock.now = at("2026-11-02T09:01:00")
        fake_ollama.hold_chats()
        catching_up = asyncio.create_task(h.bot.jobs.catch_up())
        await fake_ollama.wait_for_requests(1)  # the digest's summary waits on the model

        async with asyncio.timeout(HANG_GUARD_S):
            await h.bot.jobs.shutdown()

        assert catching_up.cancelled()
        stopped = await h.bot.jobs.runs.fetch("digest", str(CHANNEL), "2026-11-02T09:00Z")
        assert stopped is not None and stopped.status == "failed"
        fake_ollama.release_chats()
        fake_ollama.reply("One decision was made.")
        [again] = await h.bot.jobs.catch_up()
        assert again.status == "succeeded" and len(digests(h)) == 1
    finally:
        await h.bot.stop()
