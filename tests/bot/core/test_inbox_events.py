"""Events wait in the inbox until handled: what a stopped lorebot took and had not
answered is answered at the next start, a turn it had begun is not run twice (its
half-written reply is mended, or the person is told), and one conversation's events run
one at a time in the order they came."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from bot.core.event_payload import to_payload
from bot.core.live_reply import CUT_SHORT
from bot.core.replies import ABANDONED_REPLY
from bot.storage import open_memory
from tests.fakes.adapter import RecordingAdapter, Sent
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import make_settings, start_harness


async def _until(check: object, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not check():  # type: ignore[operator]  # noqa: ASYNC110 - a fake adapter
            await asyncio.sleep(0.02)


async def test_what_a_stopped_lorebot_took_is_handled_at_the_next_start(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    adapter = RecordingAdapter()
    waiting = adapter.message("what is the staging db?", channel="C1")
    begun_streamed = adapter.message("summarise the incident", channel="C2")
    begun_quiet = adapter.message("restart the workers", channel="C3")
    # What the stopped lorebot left: one event taken and not begun, two begun (one with a
    # half-written reply), all in its claims, which its crash never let go.
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url)
    stores = await open_memory(settings, clock=clock)
    try:
        inbox = stores.inbox
        for event in (waiting, begun_streamed, begun_quiet):
            key = f"test:{event.event_id}"
            assert await inbox.take(key, event.conversation.key, to_payload(event), limit=9)
            assert await inbox.claim(event.conversation.key, "stopped:1")
        for event in (begun_streamed, begun_quiet):
            assert await inbox.next(event.conversation.key, "stopped:1") is not None
        half = Sent(begun_streamed.conversation, "The incident began", "m-half")
        adapter.sent.append(half)
        conversation = replace(begun_streamed.conversation, reply_to=None)
        await stores.live_replies.record("test", asdict(conversation), half.message_id, half.text)
    finally:
        await stores.close()

    fake_ollama.reply("The staging db is db-2.")
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        await _until(lambda: len(adapter.sent) == 3 and half.edits)
        async with asyncio.timeout(10):
            while await h.bot.stores.inbox.waiting():  # noqa: ASYNC110 - no event to wait on
                await asyncio.sleep(0.02)
    finally:
        await h.bot.stop()
    by_channel = {s.conversation.channel_id: s.current for s in adapter.sent}
    assert by_channel == {
        "C1": "The staging db is db-2.",
        "C2": f"The incident began\n\n{CUT_SHORT}",
        "C3": ABANDONED_REPLY,
    }
    turns = [r for r in fake_ollama.chat_requests if "format" not in r]
    assert len(turns) == 1  # the begun turns were not run again


async def test_one_conversations_events_run_one_at_a_time_in_order(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.delay(0.3)
        fake_ollama.reply("first answer")
        fake_ollama.reply("other channel")  # asked while C1's first turn runs
        fake_ollama.reply("second answer")
        await h.bot.dispatcher.submit(h.adapter.message("first", channel="C1"))
        await h.bot.dispatcher.submit(h.adapter.message("second", channel="C1"))
        await h.bot.dispatcher.submit(h.adapter.message("meanwhile", channel="C2"))
        await h.bot.dispatcher.wait_idle()
    finally:
        await h.bot.stop()
    replies = [(s.conversation.channel_id, s.text) for s in h.adapter.sent]
    # C2 did not wait behind C1's slow first turn; C1's second waited for its first.
    assert replies == [("C2", "other channel"), ("C1", "first answer"), ("C1", "second answer")]
    assert await _inbox_empty(tmp_path, fake_ollama, clock)


async def _inbox_empty(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> bool:
    stores = await open_memory(make_settings(tmp_path / "bot.db", fake_ollama.url), clock=clock)
    try:
        return await stores.inbox.waiting() == 0
    finally:
        await stores.close()


async def _answers_at_start(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, adapter: RecordingAdapter
) -> list[str]:
    """Start lorebot on what waits in the inbox; its replies, once there is one."""
    fake_ollama.reply("Answered.")
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        await _until(lambda: adapter.replies)
    finally:
        await h.bot.stop()
    return adapter.replies


async def test_a_waiting_event_this_lorebot_cannot_read_is_dropped_and_the_rest_answered(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = RecordingAdapter()
    after = adapter.message("and this one?", channel="C1")
    stores = await open_memory(make_settings(tmp_path / "bot.db", fake_ollama.url), clock=clock)
    try:
        # Left by another version of lorebot, in a shape this one does not know.
        await stores.inbox.take("test:odd", "test/C1", {"kind": "poll", "q": 1}, limit=9)
        await stores.inbox.take(f"test:{after.event_id}", "test/C1", to_payload(after), limit=9)
    finally:
        await stores.close()
    assert await _answers_at_start(tmp_path, fake_ollama, clock, adapter) == ["Answered."]
    assert "dropped waiting event test:odd, which this lorebot cannot read" in caplog.text


async def test_a_waiting_event_that_is_not_json_is_dropped_at_once_on_each_engine(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    on_each_engine: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A damaged entry, written by hand or by a fault, is dropped with a log line, and the
    conversation's next event is answered at once, not after maintenance a day later."""
    adapter = RecordingAdapter()
    after = adapter.message("and this one?", channel="C1")
    stores = await open_memory(make_settings(tmp_path / "bot.db", fake_ollama.url), clock=clock)
    try:
        await stores.inbox.take("test:damaged", "test/C1", {"kind": "message"}, limit=9)
        await stores.inbox.take(f"test:{after.event_id}", "test/C1", to_payload(after), limit=9)
        mark = "%s" if on_each_engine == "postgresql" else "?"
        async with stores.db.write() as conn:
            await conn.execute(
                f"UPDATE inbox SET payload_json = {mark} WHERE key = {mark}",
                ('{"kind": "message", "text": "cut sho', "test:damaged"),
            )
    finally:
        await stores.close()
    assert await _answers_at_start(tmp_path, fake_ollama, clock, adapter) == ["Answered."]
    assert "dropped waiting event test:damaged, which this lorebot cannot read" in caplog.text
