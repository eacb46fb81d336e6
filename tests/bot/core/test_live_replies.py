"""Replies shown while the model writes them, through the real core, agent and model client
against the fake Ollama's streamed answers: what the person sees grows, ends as exactly
what the history keeps, and is never left half-written without a notice."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from adapters.base import APPROVE, AWAITING_APPROVAL, SEARCHING, THINKING
from bot.core.fallback import OFFLINE_NOTICE
from bot.core.live_reply import CUT_SHORT
from memory.sql.live_replies import SqlLiveReplies
from tests.fakes.adapter import StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.skills import write_skill

HISTORY = "test/C1/"


async def streaming(
    tmp_path: Path, fake: FakeOllama, clock: FakeClock, **sections: dict[str, Any]
) -> tuple[Harness, StreamingAdapter]:
    adapter = StreamingAdapter()
    return await start_harness(tmp_path, fake, clock, adapter=adapter, **sections), adapter


async def stored_reply(h: Harness, key: str = HISTORY) -> str:
    entries = (await h.bot.log.fetch_history(key)).entries
    return [e.content for e in entries if e.role == "assistant"][-1]


def shows(adapter: StreamingAdapter, number: int = 0) -> list[str]:
    return [text for op, text in adapter.streams[number].calls if op == "show"]


async def test_a_reply_grows_while_written_and_ends_as_the_history_keeps_it(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock)
    try:
        answer = "The staging database is db-2, on port 5432, behind the VPN."
        fake_ollama.reply(answer)
        await h.say("where is the staging database?")
        growing = shows(adapter)
        assert len(growing) > 3 and growing[0] == "The"
        pairs = zip(growing, growing[1:], strict=False)
        assert all(later.startswith(earlier) for earlier, later in pairs)
        assert len(adapter.sent) == 1  # one message, edited as it grew
        assert adapter.sent[0].current == answer == await stored_reply(h)
        assert fake_ollama.chat_requests[-1]["stream"] is True
    finally:
        await h.bot.stop()


async def test_words_before_a_tool_call_give_way_to_the_answer_and_the_status_says_so(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.tool_call("memory_search", {"query": "vpn"}, content="Let me look that up.")
        fake_ollama.reply("I have no notes about the VPN.")
        await h.say("what do we know about the vpn?")
        growing = shows(adapter)
        assert "Let me look that up." in growing
        assert growing[-1] == "I have no notes about the VPN."
        assert adapter.sent[0].current == "I have no notes about the VPN." == await stored_reply(h)
        assert adapter.statuses == [THINKING, SEARCHING, ""]
    finally:
        await h.bot.stop()


async def test_the_models_thinking_is_never_streamed(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock, ollama={"show_thinking": True})
    try:
        fake_ollama.reply("Use db-2.", thinking="the user means staging, so db-2")
        await h.say("which db?")
        assert shows(adapter) and not any("staging" in text for text in shows(adapter))
        final = adapter.sent[0].current
        assert "the user means staging" in final and final.endswith("Use db-2.")
        assert final == await stored_reply(h)  # shown when configured, in the final text only
    finally:
        await h.bot.stop()


async def test_a_long_reply_grows_within_the_limit_and_is_split_where_replies_split(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    adapter = StreamingAdapter(max_message_chars=60)
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        answer = " ".join(f"step {n} restarts the worker pool." for n in range(1, 7))
        fake_ollama.reply(answer)
        await h.say("how do I restart it?")
        assert max(len(text) for text in shows(adapter)) <= 60
        posted = [s.current for s in adapter.sent]
        assert len(posted) > 1 and all(len(text) <= 60 for text in posted)
        assert " ".join(posted) == answer == await stored_reply(h)
    finally:
        await h.bot.stop()


async def test_a_model_failure_mid_stream_leaves_the_offline_answer_not_half_a_reply(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.stream_error("out of memory", partial="The deploy window is on")
        await h.say("when is the deploy window?")
        assert "The deploy window is on" in shows(adapter)
        final = adapter.sent[0].current
        assert final.startswith(OFFLINE_NOTICE) and final == await stored_reply(h)
    finally:
        await h.bot.stop()


async def test_a_platform_slow_to_show_an_update_does_not_hold_up_the_models_answer(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    """The model's answer is read (and its timeout kept) while the platform is busy."""
    h, adapter = await streaming(tmp_path, fake_ollama, clock, ollama={"timeout_s": 0.5})
    try:
        adapter.hold_after(1)  # the second update waits until the platform is released
        answer = "Rotate the keys first, then restart the workers one by one."
        fake_ollama.reply(answer)
        await h.bot.dispatcher.submit(adapter.message("how do I rotate keys?"))
        async with asyncio.timeout(10):
            await adapter.held.wait()
            while not (await h.bot.log.fetch_history(HISTORY)).entries[1:]:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # the answer is kept while the update waits
        assert await stored_reply(h) == answer
        adapter.release.set()
        await h.bot.dispatcher.wait_idle()
        assert adapter.sent[0].current == answer
    finally:
        await h.bot.stop()


async def test_a_reply_cut_by_shutdown_ends_with_a_notice(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock, bot={"shutdown_timeout_s": 0.2})
    adapter.hold_after(1)  # the second update never returns: the bot is stopped meanwhile
    fake_ollama.reply("Rotate the keys first, then restart the workers one by one.")
    await h.bot.dispatcher.submit(adapter.message("how do I rotate keys?"))
    async with asyncio.timeout(10):
        await adapter.held.wait()
    await h.bot.stop()
    assert adapter.sent[0].current == f"Rotate\n\n{CUT_SHORT}"


async def test_a_reply_a_crash_left_half_written_is_marked_at_the_next_start(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock, bot={"shutdown_timeout_s": 0.2})
    adapter.hold_after(2)
    fake_ollama.reply("Rotate the keys first, then restart the workers one by one.")
    await h.bot.dispatcher.submit(adapter.message("how do I rotate keys?"))
    async with asyncio.timeout(10):
        await adapter.held.wait()
    adapter.fail_edits = 1  # the platform is gone as the bot stops: the notice cannot land
    await h.bot.stop()
    assert adapter.sent[0].current == "Rotate the"  # left as it was, recorded as unfinished

    restarted = StreamingAdapter()
    restarted.sent = adapter.sent  # the same channel, seen again after the restart
    again = await start_harness(tmp_path, fake_ollama, clock, adapter=restarted)
    try:
        unfinished = SqlLiveReplies(again.bot.db).fetch_unfinished
        async with asyncio.timeout(10):  # mended in the background, maybe before start returns
            while await unfinished("test"):  # noqa: ASYNC110 - the database has no event to wait on
                await asyncio.sleep(0.01)
        assert adapter.sent[0].current == f"Rotate the\n\n{CUT_SHORT}"
    finally:
        await again.bot.stop()


async def test_a_reply_is_recorded_while_it_streams_without_the_credentials_it_shows(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    """What a streamed reply shows is kept until it is finished, redacted as the history
    keeps the reply: a credential the model wrote reaches no row of the database."""
    h, adapter = await streaming(tmp_path, fake_ollama, clock)
    adapter.hold_after(8)  # the reply stays unfinished, its record in the database
    fake_ollama.reply("Log in with password: hunter2-Q7x and then restart the workers.")
    await h.bot.dispatcher.submit(adapter.message("how do I get in?"))
    try:
        async with asyncio.timeout(10):
            await adapter.held.wait()
        [row] = await SqlLiveReplies(h.bot.db).fetch_unfinished("test")
        assert "hunter2-Q7x" in adapter.sent[0].current  # shown, as the model wrote it
        assert row.shown.startswith("Log in with password: [REDACTED] and")
    finally:
        adapter.release.set()
        await h.bot.stop()


async def test_a_turn_waiting_for_a_card_says_so_and_shows_its_work_again_when_resumed(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, adapter = await streaming(tmp_path, fake_ollama, clock)
    try:
        write_skill(
            h.bot.settings.skills.user_root,
            "incident-triage",
            description="Triage a production incident. Use when something is down.",
            body="# Triage\n1. Check the dashboards.\n",
        )
        fake_ollama.tool_call(
            "load_skill", {"name": "incident-triage"}, content="I will load the triage skill."
        )
        await h.say("the API is down, what do I do?")
        [card] = adapter.cards
        assert adapter.statuses == [THINKING, AWAITING_APPROVAL, ""]
        # What the model said before the card stays as said, with no notice of a cut.
        assert adapter.sent[0].current == "I will load the triage skill."

        fake_ollama.reply("Check the dashboards first, then page the owner.")
        await h.react(card, APPROVE)
        assert adapter.statuses[3:] == [THINKING, ""]  # the resumed turn shows its work
        assert len(shows(adapter, 1)) > 1  # and its reply grows as it is written
        assert adapter.sent[-1].current == "Check the dashboards first, then page the owner."
    finally:
        await h.bot.stop()
