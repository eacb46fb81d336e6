"""Whatever the model sends, a turn ends in an answer, and what a turn posts is bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from bot.core.fallback import UNREADABLE_NOTICE
from bot.split import split_message
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness


def tool_messages(h: Harness) -> list[str]:
    return [m["content"] for m in h.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def calls(name: str, arguments: dict[str, Any], count: int) -> list[dict[str, Any]]:
    return [{"function": {"name": name, "arguments": arguments}} for _ in range(count)]


@pytest.mark.parametrize(
    ("tool_calls", "problem"),
    [
        (5, "tool_calls must be a list of calls, not int"),
        (True, "tool_calls must be a list of calls, not bool"),
        ("memory_read", "tool_calls must be a list of calls, not str"),
        ([{"name": "memory_read", "arguments": {"topic": "x"}}], "tool call 1 has no function"),
        ([{"function": "memory_read"}], "tool call 1 has no function name"),
        ([{"function": {"name": 5, "arguments": {}}}], "tool call 1 has no function name"),
        ([7], "tool call 1 has no function name"),
    ],
)
async def test_malformed_tool_calls_become_errors_the_model_can_correct(
    harness: Harness, tool_calls: Any, problem: str
) -> None:
    harness.ollama.raw_message({"role": "assistant", "content": "", "tool_calls": tool_calls})
    harness.ollama.reply("Let me answer without tools.")
    await harness.say("look something up")
    assert harness.adapter.replies == ["Let me answer without tools."]
    [error] = tool_messages(harness)
    assert error.startswith(f"error: {problem}") and '{"function": {"name"' in error


async def test_a_bad_call_next_to_good_ones_leaves_them_running(harness: Harness) -> None:
    harness.ollama.raw_message(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": "memory_search", "arguments": {"query": "vpn"}}},
                {"function": None},
                {"function": {"name": "memory_read", "arguments": {"topic": "vpn"}}},
            ],
        }
    )
    harness.ollama.reply("Nothing about the VPN yet.")
    await harness.say("what do we know about the vpn?")
    assert harness.adapter.replies == ["Nothing about the VPN yet."]
    found, broken, read = tool_messages(harness)
    assert found == "no notes or past messages found"
    assert broken.startswith("error: tool call 2 has no function name")
    assert read.startswith("no note named 'vpn'")


async def test_arguments_nested_too_deeply_are_refused_to_the_model(harness: Harness) -> None:
    harness.ollama.tool_call("memory_search", nested(5000))  # a JSON string, OpenAI style
    harness.ollama.tool_call("memory_search", {"query": json.loads(nested(100))})
    harness.ollama.reply("I could not search that.")
    await harness.say("search for it")
    assert harness.adapter.replies == ["I could not search that."]
    as_string, as_object = tool_messages(harness)
    assert as_string == "error: arguments nest more than 32 levels deep"
    assert as_object == (
        "error: the arguments of tool call 1 are refused: arguments nest more than 32 levels deep"
    )


async def test_a_reply_nested_too_deeply_to_read_is_answered_offline(harness: Harness) -> None:
    arguments = '{"query": ' + nested(100_000) + "}"
    call = '{"function": {"name": "memory_search", "arguments": ' + arguments + "}}"
    message = '{"role": "assistant", "content": "", "tool_calls": [' + call + "]}"
    harness.ollama.raw('{"model": "qwen3:8b", "done": true, "message": ' + message + "}")
    before = REGISTRY.get_sample_value("lorebot_model_slips_total", {"kind": "unreadable"}) or 0
    await harness.say("search for it")
    # The model answered: it is not called unreachable, and it is not marked down.
    assert harness.adapter.replies[-1].startswith(UNREADABLE_NOTICE)
    after = REGISTRY.get_sample_value("lorebot_model_slips_total", {"kind": "unreadable"})
    assert after == before + 1  # a slip of the model, counted
    harness.ollama.reply("Back to normal.")
    await harness.say("and now?")
    assert harness.adapter.replies[-1] == "Back to normal."


@pytest.mark.parametrize(
    ("name", "arguments", "key"),
    [
        ("propose_note", {"topic": "vpn", "summary": "VPN is\x00 vpn-2"}, "summary"),
        ("read_skill_resource", {"skill": "skill-creator", "path": "references/a\x00.md"}, "path"),
    ],
)
async def test_a_nul_byte_in_a_tool_argument_is_refused_to_the_model(
    harness: Harness, name: str, arguments: dict[str, str], key: str
) -> None:
    await harness.say("/skill-creator")
    harness.ollama.tool_call(name, arguments)
    harness.ollama.reply("That did not work.")
    await harness.say("do it")
    assert harness.adapter.replies[-1] == "That did not work."
    assert harness.adapter.cards == []
    [error] = tool_messages(harness)
    assert error == f"error: argument '{key}' contains a NUL character; send plain text"


async def test_tool_calls_past_the_per_round_cap_get_an_error(harness: Harness) -> None:
    searches = [
        {"function": {"name": "memory_search", "arguments": {"query": f"vpn {n}"}}}
        for n in range(12)
    ]
    harness.ollama.reply(tool_calls=searches)
    harness.ollama.reply("Done searching.")
    await harness.say("search a lot")
    assert harness.adapter.replies == ["Done searching."]
    results = tool_messages(harness)
    assert len(results) == 12
    assert results[:8] == ["no notes or past messages found"] * 8
    assert results[8:] == ["error: too many tool calls in one round; at most 8 run"] * 4


async def test_cards_per_turn_are_capped_across_rounds(harness: Harness) -> None:
    notes = [
        {
            "function": {
                "name": "propose_note",
                "arguments": {"topic": f"vpn-{n}", "summary": f"VPN {n} is vpn-{n}"},
            }
        }
        for n in range(200)
    ]
    harness.ollama.reply(tool_calls=notes)
    harness.ollama.reply(tool_calls=calls("propose_forget", {"topic": "vpn"}, 1))
    harness.ollama.reply("I proposed what I could.")
    await harness.say("note down what we know about the vpn")
    assert len(harness.adapter.cards) == 3
    assert harness.adapter.replies == ["I proposed what I could."]
    cap = "error: at most 3 cards can be shown in one turn"
    first_round = tool_messages(harness)[:200]
    assert sum(m.startswith("proposal #") for m in first_round) == 3
    assert sum(m.startswith(cap) for m in first_round) == 5
    assert tool_messages(harness)[200].startswith(cap)

    # The cap is per turn: the next message may propose again.
    harness.ollama.tool_call("propose_note", {"topic": "lab", "summary": "the lab opens at 9"})
    harness.ollama.reply("Proposed.")
    await harness.say("the lab opens at 9")
    assert len(harness.adapter.cards) == 4


async def test_a_huge_reply_is_cut_and_history_keeps_what_was_posted(harness: Harness) -> None:
    harness.ollama.reply("word " * 2_000_000)  # 10 MB
    await harness.say("tell me everything")
    posted = harness.adapter.replies
    assert len(posted) <= 5
    assert posted[-1].endswith("… (reply cut at 8000 characters)")

    harness.ollama.reply("Sure.")
    await harness.say("thanks")
    [kept] = [m["content"] for m in harness.last_prompt() if m["role"] == "assistant"]
    assert len(kept) <= 8000
    assert split_message(kept, harness.adapter.max_message_chars) == posted


async def test_a_long_reply_whose_only_paragraph_break_is_early_is_split_between_words(
    harness: Harness,
) -> None:
    lines = [f"step {n}: check the gateway logs and the deploy queue" for n in range(80)]
    reply = "Here is the plan:\n\n" + " ".join(lines[:40]) + "\n" + " ".join(lines[40:])
    harness.ollama.reply(reply)
    await harness.say("what should I check?")
    posted = harness.adapter.replies
    assert len(posted) > 1
    assert " ".join(posted).split() == reply.split()  # no word cut in two


async def test_the_reply_cap_is_a_setting_and_closes_an_open_code_block(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, bot={"max_reply_chars": 300})
    try:
        fake_ollama.reply("Run this:\n```\n" + "echo hello\n" * 100 + "```")
        await h.say("give me a script")
        [reply] = h.adapter.replies
        assert len(reply) <= 300
        assert reply.endswith("echo hello\n```\n\n… (reply cut at 300 characters)")
    finally:
        await h.bot.stop()


def tool_call_counts() -> dict[str, float]:
    counts: dict[str, float] = {}
    for metric in REGISTRY.collect():
        if metric.name != "lorebot_tool_calls":
            continue
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                tool = sample.labels["tool"]
                counts[tool] = counts.get(tool, 0.0) + sample.value
    return counts


async def test_invented_tool_names_do_not_become_metric_labels(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    # Enough mistakes allowed for every call that runs (8 a round) to reach the metric.
    harness = await start_harness(tmp_path, fake_ollama, clock, bot={"max_tool_mistakes": 20})
    try:
        before = tool_call_counts()
        for round_ in range(2):
            invented = [
                {"function": {"name": f"tool_{round_}_{n}", "arguments": {}}} for n in range(100)
            ]
            harness.ollama.reply(tool_calls=invented)
        await harness.say("use every tool you can think of")
        after = tool_call_counts()
        new_labels = set(after) - set(before)
        assert new_labels <= harness.bot.toolbox.names | {"other"}
        assert not any(label.startswith("tool_") for label in after)
        assert after["other"] - before.get("other", 0.0) == 200
    finally:
        await harness.bot.stop()
