"""Model turns: tools and their malformed calls, offline answers, thinking, prompt stability."""

from __future__ import annotations

from pathlib import Path

from adapters.base import APPROVE
from bot.core.fallback import OFFLINE_NOTICE
from bot.core.replies import APOLOGY, BUSY_REPLY
from memory import NoteDraft, Scope
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

CHANNEL = Scope.parse("channel:test/C1")


async def seed(
    h: Harness,
    topic: str = "staging-db",
    summary: str = "staging DB is pg-stage-2",
    body: str = "host pg-stage-2.internal port 5432",
) -> None:
    await h.bot.notes.save(NoteDraft(CHANNEL, topic, summary, body), actor="seed")


def tool_messages(h: Harness) -> list[str]:
    return [m["content"] for m in h.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]


async def test_memory_read_tool_returns_the_note_body(harness: Harness) -> None:
    await seed(harness)
    harness.ollama.tool_call("memory_read", {"topic": "staging-db"})
    harness.ollama.reply("Port 5432.")
    await harness.say("what port does staging use?")
    assert harness.adapter.replies == ["Port 5432."]
    [result] = tool_messages(harness)
    assert "host pg-stage-2.internal port 5432" in result


async def test_small_model_quirks_are_coerced(harness: Harness) -> None:
    await seed(harness)
    # Arguments as a JSON string, a value wrapped in extra quotes, a number as a string.
    harness.ollama.tool_call("memory_search", '{"query": "\\"staging\\"", "limit": "2"}')
    harness.ollama.reply("Found it.")
    await harness.say("search for staging")
    [result] = tool_messages(harness)
    assert "staging-db" in result and not result.startswith("error")


async def test_broken_tool_calls_become_errors_the_model_can_correct(harness: Harness) -> None:
    harness.ollama.tool_call("memory_search", "{not json")
    harness.ollama.tool_call("launch_rockets", {"count": 3})
    harness.ollama.tool_call("memory_read", {"topic": "x", "colour": "red"})
    harness.ollama.reply("Sorry, I could not look that up.")
    await harness.say("look something up")
    assert harness.adapter.replies == ["Sorry, I could not look that up."]
    errors = tool_messages(harness)
    assert errors[0].startswith("error: arguments are not valid JSON")
    assert errors[1].startswith("error: there is no tool named 'launch_rockets'")
    assert "colour" in errors[2] and errors[2].startswith("error: invalid arguments")


async def test_tool_rounds_are_bounded(harness: Harness) -> None:
    for _ in range(10):
        harness.ollama.tool_call("memory_search", {"query": "loop"})
    await harness.say("keep searching")
    rounds = harness.bot.settings.bot.max_tool_rounds
    assert len(harness.ollama.chat_requests) == rounds
    assert "tools" not in harness.ollama.chat_requests[-1]  # the last round must answer


async def test_model_proposals_go_through_a_card(harness: Harness) -> None:
    harness.ollama.tool_call(
        "propose_note", {"topic": "vpn", "summary": "VPN is vpn-2", "body": "vpn-2.corp"}
    )
    harness.ollama.reply("I proposed a note; approve it with ✅.")
    await harness.say("the VPN gateway is vpn-2.corp, keep that in mind")
    [card] = harness.adapter.cards
    assert await harness.bot.notes.list_notes() == []  # the model never writes directly
    await harness.react(card, APPROVE)
    [note] = await harness.bot.notes.list_notes()
    assert (note.scope, note.topic, note.body) == (CHANNEL, "vpn", "vpn-2.corp")
    assert (
        card.current == "✅ Saved `vpn` in this channel (channel:test/C1): VPN is vpn-2\n"
        "Say `undo` to revert it.\nDecided by user:test/UALICE at 2026-11-02 09:00 UTC."
    )


async def test_a_model_proposal_with_a_secret_is_refused_to_the_model(harness: Harness) -> None:
    harness.ollama.tool_call(
        "propose_note", {"topic": "bot-token", "summary": "token", "body": "xoxb-123456789012-abc"}
    )
    harness.ollama.reply("I won't store that.")
    await harness.say("save our token")
    assert harness.adapter.cards == []
    assert "contains a Slack token" in tool_messages(harness)[0]


async def test_ollama_down_answers_from_memory_with_a_notice(harness: Harness) -> None:
    await seed(harness)
    await harness.ollama.down()
    await harness.say("where is the staging database?")
    reply = harness.adapter.replies[-1]
    assert reply.startswith(OFFLINE_NOTICE) and "`staging-db`" in reply

    # Commands and cards keep working without the model.
    await harness.say("remember that the lab opens at 9")
    assert harness.adapter.cards and "lab" in harness.adapter.cards[-1].text


async def test_a_slow_model_times_out_into_an_offline_answer(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, ollama={"timeout_s": 0.2})
    try:
        fake_ollama.delay(1.0)
        await h.say("are you there?")
        assert h.adapter.replies[-1].startswith(OFFLINE_NOTICE)
    finally:
        await h.bot.stop()


async def test_thinking_is_not_posted(harness: Harness) -> None:
    harness.ollama.reply("Use the blue button.", thinking="The user seems confused; secret plan")
    await harness.say("which button?")
    assert harness.adapter.replies == ["Use the blue button."]


async def test_thinking_is_shown_only_when_configured(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, ollama={"show_thinking": True})
    try:
        fake_ollama.reply("Blue.", thinking="The dashboard uses blue.")
        await h.say("which colour?")
        assert h.adapter.replies == ["> 💭 thinking\n> The dashboard uses blue.\n\nBlue."]
    finally:
        await h.bot.stop()


async def test_reasoning_effort_is_translated_per_model_family(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.models = ["gpt-oss:20b", "qwen3:8b"]
    h = await start_harness(
        tmp_path, fake_ollama, clock, ollama={"model": "gpt-oss:20b", "reasoning_effort": "high"}
    )
    try:
        await h.say("hi")
        assert fake_ollama.chat_requests[-1]["think"] == "high"
    finally:
        await h.bot.stop()
    h = await start_harness(
        tmp_path, fake_ollama, clock, ollama={"model": "qwen3:8b", "reasoning_effort": "low"}
    )
    try:
        await h.say("hi")
        assert fake_ollama.chat_requests[-1]["think"] is True
    finally:
        await h.bot.stop()


async def test_a_model_without_tools_still_gets_recall(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.capabilities = ["completion"]
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await seed(h)
        await h.say("where is staging?")
        request = fake_ollama.chat_requests[-1]
        assert "tools" not in request and "think" not in request
        assert "<relevant-memories>" in request["messages"][-1]["content"]
    finally:
        await h.bot.stop()


async def test_the_prompt_prefix_is_byte_identical_until_a_note_changes(harness: Harness) -> None:
    await seed(harness)
    for question in ("first question", "second question about staging"):
        await harness.say(question)
    prefixes = [r["messages"][0]["content"] for r in harness.ollama.chat_requests]
    assert prefixes[0] == prefixes[1]
    await seed(harness, "lunch", "lunch is at noon", "")
    await harness.say("third")
    assert harness.ollama.chat_requests[-1]["messages"][0]["content"] != prefixes[0]


async def test_history_is_kept_and_compacted_past_80_percent(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.context_length = 400
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        for n in range(6):
            await h.say(f"message number {n} " + "padding words " * 20)
        last = fake_ollama.chat_requests[-1]["messages"]
        summaries = [m for m in last if m["content"].startswith("Earlier in this conversation")]
        assert summaries, "long history must be compacted into a summary"
        assert len(last) < 2 + 2 * 6
    finally:
        await h.bot.stop()


async def test_long_replies_are_split_to_the_platform_limit(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, RecordingAdapter(max_message_chars=100))
    try:
        fake_ollama.reply(" ".join(f"word{n}" for n in range(100)))
        await h.say("talk a lot")
        assert len(h.adapter.replies) > 1
        assert all(len(r) <= 100 for r in h.adapter.replies)
        assert " ".join(h.adapter.replies).split() == [f"word{n}" for n in range(100)]
    finally:
        await h.bot.stop()


async def test_one_failing_event_is_answered_with_an_apology_and_the_bot_goes_on(
    harness: Harness,
) -> None:
    harness.adapter.fail_sends = 1
    await harness.say("help")
    assert harness.adapter.replies == [APOLOGY]
    await harness.say("help")
    assert harness.adapter.replies[-1].startswith("Here is what I understand")


async def test_an_overloaded_bot_says_it_is_busy(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, bot={"queue_size": 1})
    try:
        fake_ollama.delay(0.3)
        await h.bot.dispatcher.submit(h.adapter.message("slow question", channel="C1"))
        await h.bot.dispatcher.submit(h.adapter.message("another", channel="C2"))
        await h.bot.dispatcher.wait_idle()
        assert BUSY_REPLY in h.adapter.replies
        assert len(h.adapter.replies) == 2
    finally:
        await h.bot.stop()


async def test_bots_and_strangers_are_ignored(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        bot={"allowed_users": ["user:test/UALICE"], "allowed_channels": ["channel:test/C1"]},
    )
    try:
        await h.say("help", is_bot=True)
        await h.say("help", user="USTRANGER")
        await h.say("help", channel="C9")
        assert h.adapter.replies == []
        await h.say("help")
        await h.say("help", user="UADMIN", channel="C9")  # admins are always heard
        assert len(h.adapter.replies) == 2
    finally:
        await h.bot.stop()
