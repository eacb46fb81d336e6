"""What the README promises about the scheduled jobs, checked where people meet them: the
chat and the prompts the model receives, the cards and digests posted, the CLI, and the
real APScheduler firing on a moved clock."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import time_machine

from adapters.base import APPROVE, ConversationRef, PostedMessage
from bot.cli import main as cli
from bot.jobs.runner import RunResult
from memory import Category, NoteDraft, Scope
from tests.fakes.adapter import PLATFORM, RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

C1 = f"channel:{PLATFORM}/C1"
C2 = f"channel:{PLATFORM}/C2"
DEADLINE_S = 5.0


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def jobs_harness(
    tmp_path: Path,
    fake: FakeOllama,
    clock: FakeClock,
    adapter: RecordingAdapter | None = None,
    *,
    memory: dict[str, Any] | None = None,
    **jobs: Any,
) -> Harness:
    jobs.setdefault("digests", [{"channel": C1, "cron": "0 9 * * *"}])
    return await start_harness(tmp_path, fake, clock, adapter, jobs=jobs, memory=memory or {})


def digests(h: Harness) -> list[str]:
    return [s.text for s in h.adapter.sent if s.text.startswith("📰 Digest")]


def reflection_reply(fake: FakeOllama, log: str, lessons: list[str]) -> None:
    fake.reply(json.dumps({"log": log, "lessons": lessons}))


def pattern_reply(fake: FakeOllama, topic: str) -> None:
    fake.reply(json.dumps({"topic": topic, "summary": f"how we do {topic}", "details": "- x"}))


def system_prompt(h: Harness) -> str:
    content: str = h.last_prompt()[0]["content"]
    return content


def structured_prompts(fake: FakeOllama) -> list[str]:
    """The prompts of the jobs' structured-output requests, in order."""
    return [r["messages"][-1]["content"] for r in fake.chat_requests if "format" in r]


async def reflect(h: Harness, fire: datetime) -> list[RunResult]:
    """The nightly reflection of `fire`, as the scheduler runs it."""
    h.clock.now = fire
    return await h.bot.jobs.run_period(h.bot.jobs.jobs["reflection"], "all", fire)


async def until(check: Callable[[], Any], within: float = DEADLINE_S) -> Any:
    """Poll `check` (sync or async) until it gives something truthy, for at most `within`
    seconds; returns what it gave."""
    async with asyncio.timeout(within):
        while True:
            found = check()
            if isinstance(found, Awaitable):
                found = await found
            if found:
                return found
            await asyncio.sleep(0.01)


async def remember(h: Harness, fact: str, topic: str, channel: str = "C1") -> None:
    """A person saves a note in a channel and approves its card."""
    h.script_title(topic, fact)
    await h.say(f"remember that {fact}", channel=channel)
    await h.react(h.adapter.cards[-1], APPROVE)


# --- reflection -------------------------------------------------------------------------


async def test_a_lesson_is_recalled_only_when_it_shares_most_of_its_words_with_the_question(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T10:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("Use the green pipeline.")
        await h.say("how do we release the billing service?")
        reflection_reply(
            fake_ollama,
            "Alice asked how billing is released.",
            ["Billing releases go through the green pipeline"],
        )
        [result] = await reflect(h, at("2026-11-02T23:30:00"))
        assert result.status == "succeeded"
        clock.advance(hours=10)

        # One word of three in common: word search finds the lesson, the gate keeps it out.
        fake_ollama.reply("Room 4.")
        await h.say("where is the billing office located?")
        assert "green pipeline" not in h.last_prompt()[-1]["content"]

        fake_ollama.reply("Yes, the green one.")
        await h.say("do billing releases use a pipeline?")
        tail = h.last_prompt()[-1]["content"]
        assert "<relevant-memories>" in tail and "green pipeline" in tail
    finally:
        await h.bot.stop()


async def test_reflection_keeps_at_most_three_lessons_of_a_chatty_model(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T10:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("Sure.")
        await h.say("how do we rotate the api keys?")
        lessons = [f"Lesson number {n} about key rotation" for n in range(1, 6)]
        reflection_reply(fake_ollama, "Alice asked about key rotation.", lessons)
        [result] = await reflect(h, at("2026-11-02T23:30:00"))
        assert result.status == "succeeded", result.detail
        saved = [n for n in await h.bot.notes.list_notes() if n.category is Category.REFLECTION]
        assert sorted(n.summary for n in saved) == lessons[:3]
        assert await h.bot.daily_logs.fetch("test/C1/", [at("2026-11-02T00:00:00").date()])
    finally:
        await h.bot.stop()


async def test_todays_and_yesterdays_logs_join_the_prompt_and_older_ones_do_not(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-01T10:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("Friday.")
        await h.say("when is the release freeze?")
        reflection_reply(fake_ollama, "First day: the freeze starts Friday.", [])
        await reflect(h, at("2026-11-01T23:30:00"))

        clock.now = at("2026-11-02T10:00:00")
        fake_ollama.reply("Yes.")
        await h.say("is the freeze still on?")
        prompt = system_prompt(h)
        assert "# Conversation log, yesterday (2026-11-01)\nFirst day: the freeze" in prompt
        assert "today (" not in prompt

        reflection_reply(fake_ollama, "Second day: the freeze holds.", [])
        await reflect(h, at("2026-11-02T23:30:00"))
        clock.now = at("2026-11-02T23:45:00")
        fake_ollama.reply("It holds.")
        await h.say("any news on the freeze?")
        prompt = system_prompt(h)
        assert "# Conversation log, today (2026-11-02)\nSecond day" in prompt
        assert "# Conversation log, yesterday (2026-11-01)\nFirst day" in prompt

        clock.now = at("2026-11-03T10:00:00")
        fake_ollama.reply("Still on.")
        await h.say("and today?")
        prompt = system_prompt(h)
        assert "yesterday (2026-11-02)\nSecond day" in prompt
        assert "First day" not in prompt
    finally:
        await h.bot.stop()


async def test_the_daily_logs_stay_within_the_memory_budget(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    budget_bytes = 100 * 4  # memory.token_budget of 100 tokens
    yesterday = "Y " + " ".join(f"old{n:03d}" for n in range(60))  # about 420 bytes
    today = "T " + " ".join(f"new{n:03d}" for n in range(40))  # about 280 bytes
    clock.now = at("2026-11-01T10:00:00")
    h = await jobs_harness(tmp_path, fake_ollama, clock, memory={"token_budget": 100})
    try:
        for day, log in (("2026-11-01", yesterday), ("2026-11-02", today)):
            clock.now = at(f"{day}T10:00:00")
            fake_ollama.reply("Noted.")
            await h.say(f"what happened on {day}?")
            reflection_reply(fake_ollama, log, [])
            await reflect(h, at(f"{day}T23:30:00"))
        clock.now = at("2026-11-02T23:45:00")
        fake_ollama.reply("Fine.")
        await h.say("summarise please")
        prompt = system_prompt(h)
        assert f"today (2026-11-02)\n{today}" in prompt  # the newest log comes first
        shown = prompt.split("yesterday (2026-11-01)\n", 1)[1]
        assert yesterday.startswith(shown) and shown
        assert len(today.encode()) + len(shown.encode()) <= budget_bytes
        assert "old059" not in prompt

        # Once the channel's index fills the budget, no log is left room.
        for n in range(12):
            draft = NoteDraft(Scope.parse(C1), f"service-{n}", f"service {n} runs on host-{n}")
            await h.bot.notes.save(draft, actor="a")
        fake_ollama.reply("Fine.")
        await h.say("summarise again please")
        prompt = system_prompt(h)
        assert "service-11" in prompt and "# Conversation log" not in prompt
    finally:
        await h.bot.stop()


# --- digests ----------------------------------------------------------------------------


async def test_a_digest_with_nothing_new_posts_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    both = [{"channel": C1, "cron": "0 9 * * *"}, {"channel": C2, "cron": "0 9 * * *"}]
    h = await jobs_harness(tmp_path, fake_ollama, clock, digests=both)
    digest = h.bot.jobs.jobs["digest"]
    try:
        await h.bot.notes.save(NoteDraft(Scope.parse(C1), "deploy-day", "tuesdays"), actor="a")
        clock.now = at("2026-11-02T09:00:00")
        [first] = await h.bot.jobs.fire(digest, C1, "0 9 * * *")
        [quiet] = await h.bot.jobs.fire(digest, C2, "0 9 * * *")  # nothing ever happened
        assert (first.status, quiet.status) == ("succeeded", "succeeded")
        assert [s.conversation.channel_id for s in h.adapter.sent] == ["C1"]

        clock.now = at("2026-11-03T09:00:00")  # a day without changes
        [again] = await h.bot.jobs.fire(digest, C1, "0 9 * * *")
        assert again.status == "succeeded" and "nothing posted" in again.detail
        assert len(digests(h)) == 1
    finally:
        await h.bot.stop()


# --- maintenance ------------------------------------------------------------------------


def _cli_database(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = h.bot.settings
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(settings.database.path))
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", settings.ollama.host)


async def test_jobs_run_maintenance_purges_lessons_past_their_ttl(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The bot learnt a lesson 40 days ago; the CLI runs on the real clock, 10 days past
    # the lesson's 30-day expiry.
    learnt = datetime.now(UTC) - timedelta(days=40)
    clock = FakeClock(learnt.replace(hour=12, minute=0, second=0, microsecond=0))
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("Sure.")
        await h.say("how do we rotate the api keys?")
        reflection_reply(fake_ollama, "Key rotation.", ["Rotate keys with the vault script"])
        [result] = await reflect(h, clock.now + timedelta(minutes=1))
        assert result.status == "succeeded"
        _cli_database(h, monkeypatch)
    finally:
        await h.bot.stop()

    code = await asyncio.to_thread(cli.main, ["jobs", "run", "maintenance"])
    out = capsys.readouterr().out
    assert code == 0 and re.search(r"maintenance all \S+ succeeded: .*purged 1 notes", out)
    assert await asyncio.to_thread(cli.main, ["notes", "history"]) == 0
    history = capsys.readouterr().out
    assert re.search(
        r"forget\s+channel:test/C1 / reflection-\S+-1\s+by lorebot\s+— expired", history
    )


def wal_size(h: Harness) -> int:
    wal = h.bot.settings.database.path.with_name(h.bot.settings.database.path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_maintenance_folds_the_wal_back_into_the_database(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    try:
        for n in range(40):
            body = f"runbook step {n}: " + "restart the service and check the logs " * 25
            await h.bot.notes.save(
                NoteDraft(Scope.parse(C1), f"step-{n}", body[:80], body), actor="a"
            )
        grown = wal_size(h)
        assert grown > 200_000
        clock.advance(minutes=5)
        result = await h.bot.jobs.run(h.bot.jobs.jobs["maintenance"], "all", clock.now)
        assert result.status == "succeeded"
        # Only the run's own bookkeeping is written after the checkpoint.
        assert wal_size(h) < grown // 10
    finally:
        await h.bot.stop()


async def test_maintenance_succeeds_while_another_task_is_reading_and_checkpoints_later(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock)
    maintenance = h.bot.jobs.jobs["maintenance"]
    try:
        for n in range(40):
            await h.bot.notes.save(NoteDraft(Scope.parse(C1), f"fact-{n}", f"fact {n}"), actor="a")
        grown = wal_size(h)
        clock.advance(minutes=5)
        # A read in progress on the bot's connection, as a chat turn's may be at any time.
        async with h.bot.db.conn.execute("SELECT id FROM notes") as reading:
            busy = await h.bot.jobs.run(maintenance, "all", clock.now)
            await reading.fetchall()
        assert busy.status == "succeeded", busy.detail
        assert "WAL checkpoint left for the next run" in busy.detail

        clock.advance(hours=1)
        idle = await h.bot.jobs.run(maintenance, "all", clock.now)
        assert idle.status == "succeeded" and "WAL" not in idle.detail
        assert wal_size(h) < grown // 4
    finally:
        await h.bot.stop()


# --- the job runner ---------------------------------------------------------------------


class HeldAdapter(RecordingAdapter):
    """Holds each digest post until released, noting when each post starts and ends."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[str] = []
        self.released = asyncio.Event()

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        if text.startswith("📰 Digest"):
            self.steps.append(f"start {conversation.channel_id}")
            await self.released.wait()
            self.steps.append(f"end {conversation.channel_id}")
        return await super().send(conversation, text)


async def test_runs_of_one_job_for_different_scopes_and_periods_never_overlap(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    clock.now = at("2026-11-02T08:00:00")
    adapter = HeldAdapter()
    both = [{"channel": C1, "cron": "0 9 * * *"}, {"channel": C2, "cron": "5 9 * * *"}]
    h = await jobs_harness(tmp_path, fake_ollama, clock, adapter, digests=both)
    digest = h.bot.jobs.jobs["digest"]
    try:
        for channel in (C1, C2):
            await h.bot.notes.save(NoteDraft(Scope.parse(channel), "fact", "a fact"), actor="a")
        clock.now = at("2026-11-02T09:05:00")
        first = asyncio.create_task(h.bot.jobs.run(digest, C1, at("2026-11-02T09:00:00")))
        await until(lambda: adapter.steps)
        second = asyncio.create_task(h.bot.jobs.run(digest, C2, at("2026-11-02T09:05:00")))
        # Unserialised, the second run reaches its post within milliseconds.
        with contextlib.suppress(TimeoutError):
            await until(lambda: len(adapter.steps) > 1, within=0.5)
        assert adapter.steps == ["start C1"]
        adapter.released.set()
        results = await asyncio.gather(first, second)
        assert [r.status for r in results] == ["succeeded", "succeeded"]
        assert adapter.steps == ["start C1", "end C1", "start C2", "end C2"]
    finally:
        adapter.released.set()
        await h.bot.stop()


# --- pattern extraction -----------------------------------------------------------------


async def test_a_pattern_is_proposed_in_the_channel_where_most_of_it_happened(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock, min_samples=3)
    try:
        await remember(h, "the VPN host is vpn-2", "vpn-host", channel="C1")
        await remember(h, "the wiki lives at docs.internal", "wiki-home", channel="C2")
        await remember(h, "the printer is on floor 2", "printer-floor", channel="C2")
        pattern_reply(fake_ollama, "note keeping")
        clock.advance(hours=1)
        [result] = await h.bot.jobs.run_period(h.bot.jobs.jobs["patterns"], "all", clock.now)
        assert result.status == "succeeded", result.detail
        card = h.adapter.cards[-1]
        assert "pattern-note-keeping" in card.text
        assert card.conversation.channel_id == "C2"
        assert "Evidence: 2 `note_save` actions" in card.text
        prompt = structured_prompts(fake_ollama)[-1]
        assert "wiki-home" in prompt and "printer-floor" in prompt and "vpn-host" not in prompt
    finally:
        await h.bot.stop()


async def test_write_tools_the_model_calls_in_a_chat_feed_pattern_extraction(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await jobs_harness(tmp_path, fake_ollama, clock, min_samples=2)
    try:
        for topic in ("old-vpn", "old-wiki"):
            await h.bot.notes.save(
                NoteDraft(Scope.parse(C1), topic, f"the {topic} note"), actor="user:test/UALICE"
            )
        for topic in ("old-vpn", "old-wiki"):
            fake_ollama.tool_call("propose_forget", {"topic": topic})
            fake_ollama.reply("I proposed forgetting it; approve the card if you agree.")
            await h.say(f"we no longer need {topic}, drop it")
        assert len(h.adapter.cards) == 2  # the model's calls ran; nobody decided yet

        pattern_reply(fake_ollama, "retiring notes")
        clock.advance(hours=1)
        [result] = await h.bot.jobs.run_period(h.bot.jobs.jobs["patterns"], "all", clock.now)
        assert result.detail == "proposed patterns for propose_forget"
        prompt = structured_prompts(fake_ollama)[-1]
        assert "`propose_forget` 2 times" in prompt
        assert "old-vpn" in prompt and "old-wiki" in prompt
        card = h.adapter.cards[-1]
        assert card.conversation.channel_id == "C1"
        assert "Evidence: 2 `propose_forget` actions" in card.text
    finally:
        await h.bot.stop()


# --- the scheduler, end to end ----------------------------------------------------------


async def test_the_scheduler_fires_every_job_on_its_cron_and_retries_a_failed_run(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    start = at("2026-11-02T21:00:00")
    with time_machine.travel(start, tick=False) as traveller:
        clock.now = start
        h = await jobs_harness(
            tmp_path, fake_ollama, clock, enabled=True, min_samples=2, retry_minutes=15
        )
        scheduler = h.bot.jobs.scheduler
        assert scheduler is not None

        async def run_of(job: str, scope: str, period: str, *done: str) -> Any:
            run = await h.bot.jobs.runs.fetch(job, scope, period)
            return run if run is not None and run.status in done else None

        async def step(moment: str, *due: tuple[str, str, str]) -> list[Any]:
            """Move the clock to `moment` and wait for the runs it makes due to end, so none
            is still running (and skipped as a second instance) at the next step."""
            # A run's result is stored a moment before APScheduler stops counting it as
            # running; a job fired in between would be skipped as a second instance.
            executor = scheduler._executors["default"]
            await until(lambda: not any(executor._instances.values()))
            traveller.move_to(at(moment))
            clock.now = at(moment)
            # The scheduler reads datetime.now() but sleeps on the loop's monotonic clock.
            scheduler.wakeup()
            ended = []
            for job, scope, period in due:
                ended.append(
                    await until(partial(run_of, job, scope, period, "succeeded", "failed"))
                )
            return ended

        try:
            await remember(h, "the VPN host is vpn-2", "vpn-host")
            await remember(h, "the wiki lives at docs.internal", "wiki-home")
            fake_ollama.reply("Use the green pipeline.")
            await h.say("how do we release the billing service?")

            [maintenance] = await step(
                "2026-11-02T22:05:00", ("maintenance", "all", "2026-11-02T22:05Z")
            )
            assert maintenance.status == "succeeded"

            reflection_reply(
                fake_ollama,
                "Alice saved the VPN host and the wiki.",
                ["Billing releases go through the green pipeline"],
            )
            runs = await step(
                "2026-11-02T23:30:00",
                ("reflection", "test/C1/", "2026-11-02T23:30Z"),
                ("maintenance", "all", "2026-11-02T23:05Z"),
            )
            assert [r.status for r in runs] == ["succeeded", "succeeded"]

            pattern_reply(fake_ollama, "note keeping")
            runs = await step(
                "2026-11-03T03:00:00",
                ("patterns", "all", "2026-11-03T03:00Z"),
                ("maintenance", "all", "2026-11-03T02:05Z"),
            )
            assert [r.status for r in runs] == ["succeeded", "succeeded"]
            pattern_card = h.adapter.cards[-1]
            assert "pattern-note-keeping" in pattern_card.text

            h.adapter.fail_sends = 1  # the platform rejects the first digest post
            [digest_run, _] = await step(
                "2026-11-03T09:00:00",
                ("digest", C1, "2026-11-03T09:00Z"),
                ("maintenance", "all", "2026-11-03T08:05Z"),
            )
            assert digest_run.status == "failed" and digests(h) == []

            await step("2026-11-03T09:14:00", ("maintenance", "all", "2026-11-03T09:05Z"))
            assert await run_of("digest", C1, "2026-11-03T09:00Z", "failed")  # not yet

            await step("2026-11-03T09:15:00")
            retried = await until(partial(run_of, "digest", C1, "2026-11-03T09:00Z", "succeeded"))
            assert retried.attempts == 2
            [digest] = digests(h)
            assert "`vpn-host`" in digest and "`wiki-home`" in digest
            assert "`reflection-2026-11-02-1`" in digest
            assert re.search(
                r"waiting for a decision: proposal #\d+ `pattern-note-keeping`", digest
            )

            fake_ollama.reply("Noted.")
            await h.say("what did we do yesterday?")
            assert "yesterday (2026-11-02)\nAlice saved the VPN host" in system_prompt(h)
        finally:
            await h.bot.stop()
