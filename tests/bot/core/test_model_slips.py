"""A small model's slips, through the real turn path (fake Ollama): an answer with nothing
in it is asked again once, then answered from memory with a notice (never "(no answer)");
an action announced without its call is nudged once; the same call again gets its earlier
result; mistakes with the tools are told once each, and the same mistake again, too many,
or the round limit end the turn with what it found. History keeps neither nudges nor the
slips, and the metric counts each by kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.fallback import EMPTY_NOTICE
from bot.core.slips import (
    EMPTY_NUDGE,
    INTENT_NUDGE,
    REPEATED_NOTE,
    announced_intent,
)
from memory import NoteDraft, Scope
from tests.fakes.adapter import StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.slips import slips

C1 = Scope.parse("channel:test/C1")


async def stored(h: Harness) -> list[tuple[str, str]]:
    return [(e.role, e.content) for e in (await h.bot.log.fetch_history("test/C1/")).entries]


@pytest.mark.parametrize("empty", ["", "  \n ", None], ids=["nothing", "whitespace", "thinking"])
async def test_an_empty_answer_is_asked_again_once_and_the_second_answer_is_posted(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, empty: str | None
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        before = slips("empty")
        if empty is None:
            fake_ollama.reply("", thinking="the user asks about the VPN")  # thinking alone
        else:
            fake_ollama.reply(empty)
        fake_ollama.reply("The VPN gateway is vpn-2.")
        await h.say("which VPN gateway?")
        assert h.adapter.replies == ["The VPN gateway is vpn-2."]
        assert h.last_prompt()[-1] == {"role": "user", "content": EMPTY_NUDGE}
        assert await stored(h) == [
            ("user", "which VPN gateway?"),
            ("assistant", "The VPN gateway is vpn-2."),
        ]
        assert slips("empty") == before + 1
    finally:
        await h.bot.stop()


async def test_a_second_empty_answer_gets_the_answer_from_memory_with_a_notice(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(C1, "vpn-gateway", "the VPN gateway is vpn-2"), actor="t")
        before = slips("empty twice")
        fake_ollama.reply("")
        fake_ollama.reply("")
        await h.say("which VPN gateway?")
        [reply] = h.adapter.replies
        assert reply.startswith(EMPTY_NOTICE) and "`vpn-gateway`: the VPN gateway is vpn-2" in reply
        assert "(no answer)" not in reply
        assert (await stored(h))[-1] == ("assistant", reply)
        assert slips("empty twice") == before + 1
        assert len([r for r in fake_ollama.chat_requests if "format" not in r]) == 2
    finally:
        await h.bot.stop()


async def test_the_answer_from_memory_has_the_note_an_earlier_turn_recalled(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(C1, "vpn-gateway", "the VPN gateway is vpn-2"), actor="t")
        fake_ollama.reply("It is vpn-2.")
        await h.say("which VPN gateway?")
        fake_ollama.reply("")
        fake_ollama.reply("")
        await h.say("which VPN gateway again?")
        # The prompt leaves the note to the history, which shows it already...
        prompt = [m["content"] for m in h.last_prompt() if m["role"] == "user"]
        assert "<relevant-memories>" in prompt[0] and "the VPN gateway is vpn-2" in prompt[0]
        assert prompt[1:] == ["which VPN gateway again?", EMPTY_NUDGE]
        # ...and the answer from memory still has it.
        reply = h.adapter.replies[-1]
        assert reply.startswith(EMPTY_NOTICE) and "`vpn-gateway`: the VPN gateway is vpn-2" in reply
    finally:
        await h.bot.stop()


async def test_a_streamed_empty_answer_ends_as_the_answer_the_second_try_gave(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    adapter = StreamingAdapter()
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        fake_ollama.reply("")
        fake_ollama.reply("Rotate the keys first.")
        await h.say("how do I rotate keys?")
        assert adapter.sent[-1].current == "Rotate the keys first."
        assert (await stored(h))[-1] == ("assistant", "Rotate the keys first.")
    finally:
        await h.bot.stop()


# --- an action announced, not called --------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "intent"),
    [
        ("Let me search my notes.", "Let me search my notes"),
        ("Sure! I'll check the status of web now…", "I'll check the status of web now"),
        ("Web may be down. I’m going to run the check:", "I'm going to run the check"),
        ("Okay, now I will look that up.", "I will look that up"),
    ],
)
def test_an_announced_action_is_found_at_the_end_of_an_answer(answer: str, intent: str) -> None:
    assert announced_intent(answer) == intent


@pytest.mark.parametrize(
    "answer",
    [
        "Let me check: web is healthy.",  # it reports what it found
        "I'll check the status now. It is healthy.",  # something follows the announcement
        "The VPN gateway is vpn-2.",
        "I will remember that you prefer tea.",  # not a verb of doing
        "Let me know if you need more.",
    ],
)
def test_an_answer_that_announces_nothing_is_taken_as_it_is(answer: str) -> None:
    assert announced_intent(answer) is None


async def test_an_action_announced_without_a_call_is_nudged_once_and_the_next_answer_posted(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    adapter = StreamingAdapter()
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        before = slips("intent")
        fake_ollama.reply("Let me search my notes for the VPN.")
        fake_ollama.tool_call("memory_search", {"query": "vpn"})
        fake_ollama.reply("I found nothing about the VPN.")
        await h.say("which VPN gateway?")
        nudge = INTENT_NUDGE.format(intent="Let me search my notes for the VPN")
        turns = [r for r in fake_ollama.chat_requests if "format" not in r]
        assert turns[1]["messages"][-2:] == [
            {"role": "assistant", "content": "Let me search my notes for the VPN."},
            {"role": "user", "content": nudge},
        ]
        assert "tools" in turns[1]  # the nudged request still offers the tools
        # The streamed announcement gave way to the answer, and history keeps only that.
        assert adapter.sent[-1].current == "I found nothing about the VPN."
        assert await stored(h) == [
            ("user", "which VPN gateway?"),
            ("assistant", "I found nothing about the VPN."),
        ]
        assert slips("intent") == before + 1
    finally:
        await h.bot.stop()


async def test_a_second_announcement_is_posted_as_the_answer(harness: Harness) -> None:
    harness.ollama.reply("Let me check the deploy status.")
    harness.ollama.reply("I'll check it now.")
    await harness.say("is the deploy done?")
    assert harness.adapter.replies == ["I'll check it now."]
    assert len([r for r in harness.ollama.chat_requests if "format" not in r]) == 2


# --- the same call again ------------------------------------------------------------------


async def test_the_same_call_again_gets_its_earlier_result_instead_of_a_second_run(
    harness: Harness,
) -> None:
    await harness.bot.notes.save(
        NoteDraft(C1, "vpn-gateway", "the VPN gateway is vpn-2"), actor="t"
    )
    before = slips("repeated call")
    harness.ollama.tool_call("memory_search", {"query": "vpn gateway"})
    harness.ollama.tool_call("memory_search", {"query": "vpn gateway"})
    harness.ollama.reply("It is vpn-2.")
    await harness.say("which VPN gateway?")
    first, second = [m["content"] for m in harness.last_prompt() if m["role"] == "tool"]
    assert "vpn-gateway" in first
    assert second == REPEATED_NOTE.format(name="memory_search", result=first)
    assert harness.adapter.replies == ["It is vpn-2."]
    assert slips("repeated call") == before + 1


async def test_the_same_proposal_twice_in_a_turn_shows_one_card(harness: Harness) -> None:
    note = {"topic": "vpn", "summary": "the VPN gateway is vpn-2"}
    harness.ollama.reply(tool_calls=[{"function": {"name": "propose_note", "arguments": note}}] * 2)
    harness.ollama.reply("I proposed it.")
    await harness.say("note down that the VPN gateway is vpn-2")
    assert len(harness.adapter.cards) == 1
    first, second = [m["content"] for m in harness.last_prompt() if m["role"] == "tool"]
    assert first.startswith("proposal #") and second.startswith("You already called")


# --- mistakes with the tools, and no end in sight ---------------------------------------------


async def test_a_tool_that_does_not_exist_is_told_once_and_the_same_mistake_ends_the_turn(
    harness: Harness,
) -> None:
    await harness.bot.notes.save(
        NoteDraft(C1, "vpn-gateway", "the VPN gateway is vpn-2"), actor="t"
    )
    mistakes, gave_up = slips("tool mistake"), slips("gave up")
    harness.ollama.tool_call("memory_search", {"query": "vpn"})
    harness.ollama.tool_call("check_vpn", {})
    harness.ollama.tool_call("check_vpn", {})
    harness.ollama.reply("never asked for")
    await harness.say("is the VPN up?")
    [reply] = harness.adapter.replies
    assert reply.startswith(
        "⚠️ I could not finish this answer: my model made the same mistake with its tools "
        "again (error: there is no tool named 'check_vpn'"
    )
    assert "What I found so far:\n• memory_search:" in reply and "vpn-gateway" in reply
    told = [m["content"] for m in harness.last_prompt() if m["role"] == "tool"]
    assert told[1].startswith("error: there is no tool named 'check_vpn'")
    assert len(told) == 2  # the same mistake was not told again
    assert harness.ollama.pending == 1  # the turn ended before the scripted answer
    assert (await stored(harness))[-1] == ("assistant", reply)
    assert (slips("tool mistake"), slips("gave up")) == (mistakes + 2, gave_up + 1)


async def test_distinct_mistakes_past_the_limit_end_the_turn(harness: Harness) -> None:
    names = ("nope_1", "nope_2", "nope_3", "nope_4")
    harness.ollama.reply(tool_calls=[{"function": {"name": n, "arguments": {}}} for n in names])
    await harness.say("do something")
    [reply] = harness.adapter.replies
    assert reply == (
        "⚠️ I could not finish this answer: my model made 4 mistakes with its tools. "
        "I found nothing to show yet."
    )
    assert harness.ollama.pending == 0 and len(harness.ollama.chat_requests) == 1


async def test_arguments_that_fail_validation_twice_end_the_turn(harness: Harness) -> None:
    harness.ollama.tool_call("propose_note", {"topic": "vpn"})
    harness.ollama.tool_call("propose_note", {"topic": "vpn"})
    await harness.say("note down the vpn")
    [reply] = harness.adapter.replies
    assert reply.startswith("⚠️ I could not finish this answer: my model made the same mistake")
    assert "summary" in reply  # which argument was wrong, as the model was told
    assert harness.adapter.cards == []


async def test_a_turn_at_the_round_limit_ends_with_what_it_found(harness: Harness) -> None:
    await harness.bot.notes.save(
        NoteDraft(C1, "vpn-gateway", "the VPN gateway is vpn-2"), actor="t"
    )
    rounds = harness.bot.settings.bot.max_tool_rounds
    for n in range(rounds):  # the last answer calls a tool though none is offered
        harness.ollama.tool_call("memory_search", {"query": f"vpn {n}"})
    await harness.say("which VPN gateway?")
    [reply] = harness.adapter.replies
    assert reply.startswith(
        f"⚠️ I could not finish this answer: my model was still calling tools after {rounds} "
        "rounds. What I found so far:\n• memory_search:"
    )
    assert "vpn-gateway" in reply and harness.ollama.pending == 0
    assert "tools" not in [r for r in harness.ollama.chat_requests if "format" not in r][-1]
    assert (await stored(harness))[-1] == ("assistant", reply)
