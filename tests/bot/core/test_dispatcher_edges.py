"""The dispatcher as an operator sees it: why events were dropped (in `/metrics`), the one
log line per event, a late event during shutdown, and a reply that cannot be posted."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from adapters.base import (
    APPROVE,
    ConversationRef,
    DeliveryError,
    EventSink,
    NotTaken,
    PostedMessage,
)
from bot.core.replies import APOLOGY, BUSY_REPLY, UNAVAILABLE_REPLY
from memory.sqlite.driver import sqlite_module
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

# The loggers of taking events and of handling them.
DISPATCHING = ("bot.core.dispatcher", "bot.core.handling")


def dropped(reason: str) -> float:
    """`lorebot_events_dropped_total{reason=…}` as `/metrics` shows it."""
    return REGISTRY.get_sample_value("lorebot_events_dropped_total", {"reason": reason}) or 0.0


def received(platform: str) -> float:
    """`lorebot_events_received_total{platform=…}` as `/metrics` shows it."""
    value = REGISTRY.get_sample_value("lorebot_events_received_total", {"platform": platform})
    return value or 0.0


class LateAdapter(RecordingAdapter):
    """A platform connection that delivers one more message while it is being closed."""

    async def start(self, sink: EventSink) -> None:
        await super().start(sink)
        self.late_sink = sink

    def __init__(self) -> None:
        super().__init__()
        self.not_taken: list[NotTaken] = []

    async def close(self) -> None:
        try:
            await self.late_sink(self.message("one more thing"))
        except NotTaken as exc:  # what the platform is told: Slack then sends it elsewhere
            self.not_taken.append(exc)
        await super().close()


async def test_an_event_arriving_during_shutdown_is_not_taken(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    adapter = LateAdapter()
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    before = dropped("stopping")
    await h.bot.stop()
    assert dropped("stopping") == before + 1
    assert adapter.sent == []  # no "restarting" message: the event is another replica's
    assert len(adapter.not_taken) == 1


async def test_drop_reasons_are_counted_by_name(harness: Harness) -> None:
    reasons = ["not allowed", "not addressed", "duplicate", "reaction removed"]
    before = {reason: dropped(reason) for reason in reasons}
    await harness.say("help", is_bot=True)
    chatter = harness.adapter.message("just chatting among people")
    await harness.send(dataclasses.replace(chatter, mentions_bot=False))
    message = harness.adapter.message("help")
    await harness.send(message)
    await harness.send(message)
    harness.script_title("wiki", "the wiki moved")
    await harness.say("remember that the wiki moved to docs.internal")
    reaction = harness.adapter.reaction(harness.adapter.cards[-1], APPROVE, user="UMALLORY")
    await harness.send(dataclasses.replace(reaction, added=False))
    assert {reason: dropped(reason) - before[reason] for reason in reasons} == {
        reason: 1.0 for reason in reasons
    }


async def test_each_event_gets_one_log_line_with_its_outcome(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.core")
    await harness.say("help")
    harness.script_title("wiki", "the wiki moved")
    await harness.say("remember that the wiki moved to docs.internal")
    card = harness.adapter.cards[-1]
    await harness.react(card, APPROVE, user="UMALLORY")  # not Mallory's card: ignored
    await harness.react(card, APPROVE)
    await harness.react(card, APPROVE)  # already approved
    key = "test/C1"
    lines = [r.getMessage() for r in caplog.records if r.name in DISPATCHING]
    assert lines == [
        f"message conversation={key} person=user:test/UALICE outcome=handled",
        f"message conversation={key} person=user:test/UALICE outcome=handled",
        f"reaction conversation={key} person=user:test/UMALLORY outcome=ignored",
        f"reaction conversation={key} person=user:test/UALICE outcome=proposal 1 approved",
        f"reaction conversation={key} person=user:test/UALICE "
        "outcome=closed proposal (proposal 1 was already approved)",
    ]


async def test_a_reply_that_cannot_be_posted_is_logged_and_the_bot_goes_on(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    harness.adapter.fail_sends = 2  # the answer fails, and so does the apology
    await harness.say("help")
    assert harness.adapter.replies == []
    failures = [r for r in caplog.records if r.name in DISPATCHING and r.exc_info]
    assert [r.getMessage() for r in failures][-1] == "could not reply in test/C1"
    await harness.say("help")
    assert harness.adapter.replies[-1].startswith("Here is what I understand")
    assert APOLOGY not in harness.adapter.replies


async def test_a_busy_bot_turns_new_events_away_but_drops_repeats_quietly(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.core")
    h = await start_harness(tmp_path, fake_ollama, clock, bot={"queue_size": 1})
    try:
        answered = h.adapter.message("help")
        await h.send(answered)
        before = {reason: dropped(reason) for reason in ("busy", "duplicate")}
        fake_ollama.delay(0.3)
        fake_ollama.reply("slow answer")
        await h.bot.dispatcher.submit(h.adapter.message("a slow question", channel="C2"))
        await h.bot.dispatcher.submit(answered)  # the platform retries an answered event
        newcomer = h.adapter.message("another question", channel="C3")
        await h.bot.dispatcher.submit(newcomer)
        await h.bot.dispatcher.wait_idle()
    finally:
        await h.bot.stop()
    assert h.adapter.replies.count(BUSY_REPLY) == 1
    assert {reason: dropped(reason) - before[reason] for reason in before} == {
        "busy": 1.0,
        "duplicate": 1.0,
    }
    lines = [r.getMessage() for r in caplog.records if r.name in DISPATCHING]
    assert f"dropped duplicate event test:{answered.event_id}" in lines
    assert f"queue full (1 events); turning away test:{newcomer.event_id}" in lines


async def test_two_deliveries_of_one_event_at_once_are_answered_once(harness: Harness) -> None:
    """Slack may deliver an event again before the first delivery was recorded."""
    before = dropped("duplicate")
    message = harness.adapter.message("help")
    dispatcher = harness.bot.dispatcher
    await asyncio.gather(dispatcher.submit(message), dispatcher.submit(message))
    await dispatcher.wait_idle()
    assert len(harness.adapter.replies) == 1
    assert dropped("duplicate") == before + 1


class RefusingAdapter(RecordingAdapter):
    """A platform that refuses every post (the bot was removed from the channel)."""

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        raise DeliveryError("channel_not_found")


async def test_a_failure_is_apologised_for_and_logged_once_with_its_traceback(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.core")
    h = await start_harness(tmp_path, fake_ollama, clock)
    message = h.adapter.message("help")
    try:
        h.adapter.fail_sends = 1
        await h.send(message)  # a bug, as far as the person can tell
    finally:
        await h.bot.stop()
    assert h.adapter.replies == [APOLOGY]
    lines = [r.getMessage() for r in caplog.records if r.name in DISPATCHING]
    assert lines[-1] == "message conversation=test/C1 person=user:test/UALICE outcome=failed"
    [failure] = [r for r in caplog.records if r.name in DISPATCHING and r.exc_info]
    assert failure.getMessage() == f"failed to handle event {message.event_id}"


async def test_a_refused_post_is_logged_as_not_delivered_without_an_apology(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.core")
    adapter = RefusingAdapter()
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        await h.say("help")
    finally:
        await h.bot.stop()
    lines = [r.getMessage() for r in caplog.records if r.name in DISPATCHING]
    assert lines == ["message conversation=test/C1 person=user:test/UALICE outcome=not delivered"]


async def test_events_are_counted_per_platform_as_they_arrive(harness: Harness) -> None:
    before = received("test")
    await harness.say("help")
    await harness.say("help", is_bot=True)  # dropped, but it did arrive
    assert received("test") == before + 2


async def test_an_event_that_cannot_be_recorded_is_logged_with_its_key(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, database={"busy_timeout_ms": 50})
    before = dropped("database unavailable")
    # The same SQLite library as lorebot's, so the two connections see each other's locks.
    holder = sqlite_module().connect(h.bot.settings.database.path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        message = h.adapter.message("hello there")
        await h.send(message)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
        await h.bot.stop()
    assert h.adapter.replies == [UNAVAILABLE_REPLY]
    assert dropped("database unavailable") == before + 1
    [record] = [r for r in caplog.records if r.name in DISPATCHING and r.exc_info]
    expected = f"could not record event test:{message.event_id}; the database is unavailable"
    assert record.getMessage() == expected


async def test_a_slow_conversation_does_not_hold_up_another(
    harness: Harness, fake_ollama: FakeOllama
) -> None:
    fake_ollama.delay(0.3)
    fake_ollama.reply("the slow answer")
    fake_ollama.reply("the quick answer")
    dispatcher = harness.bot.dispatcher
    await dispatcher.submit(harness.adapter.message("a hard question", channel="C1"))
    await dispatcher.submit(harness.adapter.message("an easy one", channel="C2"))
    await dispatcher.wait_idle()
    assert harness.adapter.replies == ["the quick answer", "the slow answer"]


async def test_the_queue_limit_counts_every_waiting_event(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, bot={"queue_size": 2})
    try:
        fake_ollama.delay(0.3)
        fake_ollama.delay(0.3)
        for channel in ("C1", "C2", "C3"):
            await h.bot.dispatcher.submit(h.adapter.message("a slow question", channel=channel))
        await h.bot.dispatcher.wait_idle()
    finally:
        await h.bot.stop()
    assert h.adapter.replies.count(BUSY_REPLY) == 1
    assert len(h.adapter.replies) == 3


async def test_a_conversation_claimed_as_lorebot_stops_is_let_go_at_once(
    harness: Harness,
) -> None:
    """An event stored, and its conversation claimed, while lorebot begins to stop: the
    claim is let go at once, so another replica takes the event up without waiting for
    the claim to lapse, and nothing of it was begun here."""
    dispatcher = harness.bot.dispatcher
    # The same SQLite library as lorebot's, so the two connections see each other's locks.
    other = sqlite_module().connect(harness.bot.settings.database.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # the take waits for this writer
        submitted = asyncio.create_task(dispatcher.submit(harness.adapter.message("hello")))
        await asyncio.sleep(0)  # the take is on its way
        dispatcher.stop_accepting()
        other.execute("ROLLBACK")
        await submitted
        await dispatcher.wait_idle()
        claims = other.execute("SELECT count(*) FROM conversation_claims").fetchone()[0]
        begun = other.execute("SELECT count(*) FROM inbox WHERE started_at IS NOT NULL")
        waiting = other.execute("SELECT count(*) FROM inbox").fetchone()[0]
        assert (claims, begun.fetchone()[0], waiting) == (0, 0, 1)
    finally:
        other.close()
    assert harness.adapter.replies == []
