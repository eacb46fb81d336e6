"""Catch-up at start over several schedules, and what a missed or repeated run leaves
behind: its record, its log line, its result."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.base import APPROVE
from bot.jobs.runner import RunResult
from memory import Category, NoteDraft, Scope
from tests.fakes.adapter import PLATFORM
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

C1, C2, C3 = (f"channel:{PLATFORM}/{c}" for c in ("C1", "C2", "C3"))
LEAP_DAY = "0 9 29 2 *"  # no firing in the week before November 2026


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def digests_in(h: Harness, channel: str) -> list[str]:
    return [
        s.text
        for s in h.adapter.sent
        if s.text.startswith("📰 Digest") and s.conversation.channel_id == channel
    ]


async def test_catch_up_runs_every_missed_digest_after_one_that_had_nothing_due(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:30:00")
    schedules = [{"channel": C2, "cron": LEAP_DAY}] + [
        {"channel": c, "cron": "0 9 * * *"} for c in (C1, C3)
    ]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": schedules})
    try:
        for channel in (C1, C3):
            draft = NoteDraft(Scope.parse(channel), "deploy-day", "we deploy on tuesdays")
            await h.bot.notes.save(draft, actor="user:test/UALICE")
        clock.now = at("2026-11-02T10:30:00")  # both 09:00 digests were missed
        await h.bot.jobs.catch_up()
        assert [len(digests_in(h, c)) for c in ("C1", "C2", "C3")] == [1, 0, 1]
    finally:
        await h.bot.stop()


async def test_a_missed_run_is_recorded_and_logged_with_why(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.jobs.runner")
    clock.now = at("2026-11-02T20:00:00")  # the 09:00 digest is 11 h late
    digests = [{"channel": C1, "cron": "0 9 * * *"}]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": digests})
    try:
        await h.bot.jobs.catch_up()
        run = await h.bot.jobs.runs.fetch("digest", C1, "2026-11-02T09:00Z")
        assert run is not None and run.error == "missed while lorebot was not running"
        logged = [r.getMessage() for r in caplog.records if "missed its" in r.getMessage()]
        assert f"job digest {C1} missed its 2026-11-02T09:00Z run" in logged
    finally:
        await h.bot.stop()


async def test_a_period_run_twice_says_it_was_already_done(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T09:00:00")
    digests = [{"channel": C1, "cron": "0 9 * * *"}]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": digests})
    try:
        job = h.bot.jobs.jobs["digest"]
        first = await h.bot.jobs.run(job, C1, clock.now)
        again = await h.bot.jobs.run(job, C1, clock.now)
        assert first.status == "succeeded"
        assert again == RunResult("digest", C1, "2026-11-02T09:00Z", "already-done")
    finally:
        await h.bot.stop()


async def _digest_at(h: Harness, when: str) -> RunResult:
    h.clock.now = at(when)
    return await h.bot.jobs.run(h.bot.jobs.jobs["digest"], C1, h.clock.now)


async def _note(h: Harness, topic: str, summary: str) -> None:
    await h.bot.notes.save(NoteDraft(Scope.parse(C1), topic, summary), actor="user:test/UALICE")


async def test_a_digest_covers_everything_since_the_last_one_that_was_posted(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    digests = [{"channel": C1, "cron": "0 9 * * *"}]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": digests})
    try:
        await _note(h, "deploy-day", "we deploy on tuesdays")
        fake_ollama.reply("")  # no summary: the digest is the list alone
        assert (await _digest_at(h, "2026-11-02T09:00:00")).status == "succeeded"
        assert digests_in(h, "C1") == [
            "📰 Digest since 2026-11-01 09:00 UTC\n• new: `deploy-day` — we deploy on tuesdays"
        ]
        clock.now = at("2026-11-02T12:00:00")
        await _note(h, "vpn", "the VPN is vpn-2")
        fake_ollama.reply("The VPN changed.")  # no digest on the 3rd: the next covers it
        assert (await _digest_at(h, "2026-11-04T09:00:00")).status == "succeeded"
        assert {s.conversation.platform for s in h.adapter.sent} == {PLATFORM}
        later = digests_in(h, "C1")[-1]
        assert later.startswith("📰 Digest since 2026-11-02 09:00 UTC\nThe VPN changed.\n\n")
        assert later.endswith("• new: `vpn` — the VPN is vpn-2")
    finally:
        await h.bot.stop()


@pytest.mark.parametrize("count", [20, 21])
async def test_a_digest_shows_twenty_changes_and_counts_the_rest(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, count: int
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    digests = [{"channel": C1, "cron": "0 9 * * *"}]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": digests})
    try:
        for n in range(count):
            await _note(h, f"fact-{n}", f"fact number {n}")
        fake_ollama.reply("Many facts.")
        await _digest_at(h, "2026-11-02T09:00:00")
        lines = "\n".join(digests_in(h, "C1")).splitlines()
        assert len([line for line in lines if line.startswith("• new: ")]) == 20
        more = [line for line in lines if line.startswith("… and ")]
        expected = [f"… and 1 more (`lorebot notes history --scope {C1}`)"]
        assert more == (expected if count > 20 else [])
    finally:
        await h.bot.stop()


async def test_a_digest_names_each_kind_of_change(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    digests = [{"channel": C1, "cron": "0 9 * * *"}]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": digests})
    try:
        notes, who, here = h.bot.notes, "user:test/UALICE", Scope.parse(C1)
        await _note(h, "standup", "standup at 10")
        await _note(h, "standup", "standup at 11")
        await _note(h, "old-vpn", "the VPN was vpn-1")
        await notes.forget(here, "old-vpn", actor=who)
        await _note(h, "oncall", "oncall is alice")
        changed = await notes.save(NoteDraft(here, "oncall", "oncall is bob"), actor=who)
        assert changed.change_id is not None
        await notes.revert(changed.change_id, actor=who)
        pattern = NoteDraft(
            here, "pattern-deploys", "deploys go out on tuesdays", category=Category.PATTERN
        )
        await notes.save(pattern, actor=who)
        fake_ollama.reply("Several changes.")
        await _digest_at(h, "2026-11-02T09:00:00")
        [digest] = digests_in(h, "C1")
        for line in [
            "• changed: `standup` — standup at 11",
            "• forgotten: `old-vpn` — the VPN was vpn-1",
            "• reverted: `oncall` — oncall is alice",
            "• pattern (new): `pattern-deploys` — deploys go out on tuesdays",
        ]:
            assert line in digest.splitlines()
    finally:
        await h.bot.stop()


async def test_a_digest_for_a_platform_that_is_not_connected_fails_saying_so(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    elsewhere = "channel:slack/C9"
    digests = [{"channel": elsewhere, "cron": "0 9 * * *"}]
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"digests": digests})
    try:
        draft = NoteDraft(Scope.parse(elsewhere), "deploy-day", "we deploy on tuesdays")
        await h.bot.notes.save(draft, actor="user:slack/UALICE")
        fake_ollama.reply("One change.")
        clock.now = at("2026-11-02T09:00:00")
        result = await h.bot.jobs.run(h.bot.jobs.jobs["digest"], elsewhere, clock.now)
        assert (result.status, result.detail) == (
            "failed",
            "no slack adapter is running to post the digest",
        )
    finally:
        await h.bot.stop()


async def _maintenance_at(h: Harness, when: str) -> RunResult:
    h.clock.now = at(when)
    return await h.bot.jobs.run(h.bot.jobs.jobs["maintenance"], "all", h.clock.now)


async def test_maintenance_says_what_it_dropped_and_backs_up_once_a_day(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    backups = tmp_path / "backups"
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"backup_dir": backups})
    try:
        fake_ollama.reply("Hi.")
        await h.say("hello")  # its event id is kept a day against replays
        first = await _maintenance_at(h, "2026-11-03T20:00:00")
        assert first.detail.startswith(
            f"expired 0 proposals, purged 0 notes, dropped 1 event ids, backed up to {backups}/"
        )
        again = await _maintenance_at(h, "2026-11-03T21:00:00")
        assert again.detail == "expired 0 proposals, purged 0 notes, dropped 0 event ids"
    finally:
        await h.bot.stop()


async def test_maintenance_drops_events_that_waited_a_day_and_says_so(
    harness: Harness, clock: FakeClock
) -> None:
    inbox = harness.bot.stores.inbox
    # Taken on a platform this bot no longer answers on: nobody would ever handle them.
    for n in (1, 2):
        await inbox.take(f"gone:E{n}", "gone/C1", {"kind": "message"}, limit=10)
    clock.advance(hours=23)
    await inbox.take("gone:E3", "gone/C1", {"kind": "message"}, limit=10)
    result = await _maintenance_at(harness, "2026-11-03T09:30:00")
    assert result.detail.endswith("dropped 2 event ids, dropped 2 events waiting over a day")
    assert await inbox.waiting() == 1


async def test_maintenance_without_a_backup_folder_says_nothing_of_backups(
    harness: Harness,
) -> None:
    result = await _maintenance_at(harness, "2026-11-03T20:00:00")
    assert result.detail == "expired 0 proposals, purged 0 notes, dropped 0 event ids"


async def test_reflection_puts_a_dms_lessons_in_private_and_a_channels_in_the_channel(
    harness: Harness,
) -> None:
    harness.clock.now = at("2026-11-02T10:00:00")
    harness.ollama.reply("Use the green pipeline.")
    await harness.say("how do we release billing?", dm=True)
    harness.ollama.reply("Room 4.")
    await harness.say("where is the billing office?")
    for lesson in ("Alice releases billing on tuesdays", "The billing office is room 4"):
        harness.ollama.reply(json.dumps({"log": "A question.", "lessons": [lesson]}))
    fire = at("2026-11-02T23:30:00")
    harness.clock.now = fire
    results = await harness.bot.jobs.run_period(harness.bot.jobs.jobs["reflection"], "all", fire)
    assert [r.status for r in results] == ["succeeded", "succeeded"]

    prompts = [r["messages"][-1]["content"] for r in harness.ollama.chat_requests if "format" in r]
    assert prompts[0] == (
        "Here is today's conversation between a team chat bot and its users. Write a short log "
        "of what happened (facts, decisions, open questions) and at most three short lessons "
        "the bot should remember to do better. Answer in JSON.\n\n"
        "user: how do we release billing?\nassistant: Use the green pipeline."
    )
    mine = await harness.bot.notes.fetch(Scope.parse("user:test/UALICE"), "reflection-2026-11-02-1")
    assert mine is not None and mine.private and mine.summary.startswith("Alice releases")
    ours = await harness.bot.notes.fetch(Scope.parse(C1), "reflection-2026-11-02-1")
    assert ours is not None and not ours.private and ours.summary.startswith("The billing office")
    assert (mine.author, mine.confidence, mine.expires_at) == (
        "lorebot",
        0.6,
        at("2026-12-02T23:30:00"),
    )
    assert mine.source.startswith("reflection of dm:")
    [change] = await harness.bot.notes.fetch_history(Scope.parse(C1), "reflection-2026-11-02-1")
    assert change.actor == "lorebot"


async def test_reflection_windows_and_days_follow_the_jobs_timezone(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-01T23:40:00")  # 00:40 on the 2nd in Berlin
    jobs = {"timezone": "Europe/Berlin", "reflection_cron": "30 0 * * *"}
    h = await start_harness(tmp_path, fake_ollama, clock, jobs=jobs)
    try:
        fake_ollama.reply("Room 4.")
        await h.say("where is the billing office?")
        fake_ollama.reply(json.dumps({"log": "A question.", "lessons": ["Billing is in room 4"]}))
        fire = at("2026-11-02T23:30:00")  # 00:30 on the 3rd in Berlin
        clock.now = fire
        [result] = await h.bot.jobs.run_period(h.bot.jobs.jobs["reflection"], "all", fire)
        assert (result.status, result.detail) == ("succeeded", "logged 2026-11-03, 1 lessons")
        assert await h.bot.notes.fetch(Scope.parse(C1), "reflection-2026-11-03-1") is not None
    finally:
        await h.bot.stop()


async def test_a_pattern_card_shows_its_evidence_in_the_channel_it_came_from(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T10:00:00")
    h = await start_harness(tmp_path, fake_ollama, clock, jobs={"min_samples": 2})
    try:
        for topic, fact in [
            ("vpn-host", "the VPN host is vpn-2"),
            ("wiki-home", "the wiki is up"),
            ("printer", "the printer is on floor 2"),
            ("lunch", "lunch is at 12"),
        ]:
            h.script_title(topic, fact)
            await h.say(f"remember that {fact}")
            await h.react(h.adapter.cards[-1], APPROVE)
        fake_ollama.reply(
            json.dumps(
                {"topic": "note keeping", "summary": "how we keep notes", "details": "- short"}
            )
        )
        clock.advance(hours=1)
        await h.bot.jobs.run_period(h.bot.jobs.jobs["patterns"], "all", clock.now)
        prompt = [r for r in fake_ollama.chat_requests if "format" in r][-1]["messages"][-1]
        assert prompt["content"].startswith(
            "A team repeated the action `note_save` 4 times. From these examples, abstract the "
            "convention they follow (naming, values, order), so it can guide the next time. "
            "Answer in JSON.\n\n- {"
        )
        assert prompt["content"].count("\n- {") == 4
        card = h.adapter.cards[-1]
        assert (card.conversation.channel_id, card.conversation.team_id) == ("C1", "T1")
        assert "Where: this channel (channel:test/C1)" in card.text
        assert (
            "Evidence: 4 `note_save` actions, the latest on 2026-11-02, 2026-11-02, 2026-11-02\n"
            in card.text
        )
        await h.react(card, APPROVE)
        note = await h.bot.notes.fetch(Scope.parse(C1), "pattern-note-keeping")
        assert note is not None and note.author == "lorebot"
    finally:
        await h.bot.stop()
