"""Skills through the real core: catalog in the prefix, approved loads that resume the turn,
person activation, re-approval after an edit, and skill creation."""

from __future__ import annotations

import os
from pathlib import Path

from adapters.base import APPROVE, REJECT
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.skills import write_skill

BODY = "# Triage\n1. Check the dashboards.\n2. Page the owner.\n"


def user_root(h: Harness) -> Path:
    return h.bot.settings.skills.user_root


def add_triage(h: Harness, body: str = BODY) -> Path:
    return write_skill(
        user_root(h),
        "incident-triage",
        description="Triage a production incident. Use when something is down.",
        body=body,
    )


def touch(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


async def test_catalog_is_in_the_prefix_and_stable_until_a_skill_changes(harness: Harness) -> None:
    folder = add_triage(harness)
    await harness.say("first")
    await harness.say("second")
    prefixes = [r["messages"][0]["content"] for r in harness.ollama.chat_requests]
    assert prefixes[0] == prefixes[1]
    assert "- incident-triage: Triage a production incident." in prefixes[0]
    assert "- remembering:" in prefixes[0]  # bundled

    write_skill(user_root(harness), "incident-triage", description="Changed. Use when x.")
    touch(folder / "SKILL.md", 10**18)
    await harness.say("third")
    assert (
        "- incident-triage: Changed. Use when x."
        in harness.ollama.chat_requests[-1]["messages"][0]["content"]
    )


async def test_model_load_shows_a_card_and_the_turn_resumes_on_approval(harness: Harness) -> None:
    add_triage(harness)
    harness.ollama.tool_call("load_skill", {"name": "incident-triage"})
    await harness.say("the API is down, what do I do?")
    [card] = harness.adapter.cards
    assert harness.adapter.replies == []  # the turn waits for the decision
    assert "🧩 Load the skill `incident-triage`?" in card.text
    assert "Description: Triage a production incident." in card.text
    assert f"From: {(user_root(harness) / 'incident-triage' / 'SKILL.md').resolve()}" in card.text
    assert "sha256" in card.text and "> 1. Check the dashboards." in card.text

    harness.ollama.reply("First check the dashboards, then page the owner.")
    await harness.react(card, APPROVE)
    assert harness.adapter.replies == ["First check the dashboards, then page the owner."]
    resumed = harness.ollama.chat_requests[-1]["messages"]
    assert resumed[-1]["role"] == "tool" and "2. Page the owner." in resumed[-1]["content"]
    assert resumed[-2]["tool_calls"][0]["function"]["name"] == "load_skill"

    # Approved for this conversation: the next turn carries it without asking again.
    harness.ollama.tool_call("load_skill", {"name": "incident-triage"})
    harness.ollama.reply("Still following the triage steps.")
    await harness.say("and now?")
    assert len(harness.adapter.cards) == 1
    assert any("Active skill" in m["content"] for m in harness.ollama.chat_requests[-1]["messages"])


async def test_a_declined_load_tells_the_model(harness: Harness) -> None:
    add_triage(harness)
    harness.ollama.tool_call("load_skill", {"name": "incident-triage"})
    await harness.say("the API is down")
    harness.ollama.reply("OK, without the runbook: check the logs.")
    await harness.react(harness.adapter.cards[0], REJECT)
    assert harness.adapter.replies == ["OK, without the runbook: check the logs."]
    assert "declined" in harness.ollama.chat_requests[-1]["messages"][-1]["content"]
    assert harness.adapter.cards[0].current.startswith("❌ Declined")


async def test_an_approval_after_a_restart_resumes_the_turn(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    first = await start_harness(tmp_path, fake_ollama, clock)
    add_triage(first)
    fake_ollama.tool_call("load_skill", {"name": "incident-triage"})
    await first.say("the API is down")
    [card] = first.adapter.cards
    await first.bot.stop()

    second = await start_harness(tmp_path, fake_ollama, clock, RecordingAdapter())
    second.adapter.sent.append(card)
    try:
        fake_ollama.reply("Resumed after the restart.")
        await second.react(card, APPROVE)
        assert second.adapter.replies == ["Resumed after the restart."]
    finally:
        await second.bot.stop()


async def test_an_edited_skill_asks_again(harness: Harness) -> None:
    folder = add_triage(harness)
    harness.ollama.tool_call("load_skill", {"name": "incident-triage"})
    await harness.say("down!")
    await harness.react(harness.adapter.cards[0], APPROVE)

    add_triage(harness, body=BODY + "3. Write the postmortem.\n")
    touch(folder / "SKILL.md", 10**18)
    harness.ollama.tool_call("load_skill", {"name": "incident-triage"})
    await harness.say("down again!")
    assert len(harness.adapter.cards) == 2
    assert not any(
        "Active skill" in m["content"] for m in harness.ollama.chat_requests[-1]["messages"]
    )


async def test_a_person_activates_a_skill_by_name_without_a_card(harness: Harness) -> None:
    write_skill(
        user_root(harness),
        "release",
        extra="disable-model-invocation: true\n",
        body="Release steps: tag, build, announce.",
    )
    await harness.say("hello")
    assert "- release:" not in harness.ollama.chat_requests[-1]["messages"][0]["content"]

    harness.ollama.reply("Tagging first.")
    await harness.say("/release we ship 2.1 today")
    assert harness.adapter.cards == []
    assert harness.adapter.replies[-1] == "Tagging first."
    messages = harness.ollama.chat_requests[-1]["messages"]
    assert any("Release steps: tag, build, announce." in m["content"] for m in messages)
    assert messages[-1]["content"].endswith("we ship 2.1 today")


async def test_the_model_cannot_load_a_people_only_skill(harness: Harness) -> None:
    write_skill(user_root(harness), "release", extra="disable-model-invocation: true\n")
    harness.ollama.tool_call("load_skill", {"name": "release"})
    harness.ollama.reply("I can't load that.")
    await harness.say("release please")
    assert harness.adapter.cards == []
    tool = [m for m in harness.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert "only be started by a person" in tool[0]["content"]


async def test_unknown_skill_command_is_a_clear_message(harness: Harness) -> None:
    await harness.say("/nope do it")
    assert harness.adapter.replies[-1].startswith("⚠️ there is no skill 'nope' here")
    await harness.say("/help")
    assert harness.adapter.replies[-1].startswith("Here is what I understand")


async def test_skill_creation_through_a_card(harness: Harness) -> None:
    harness.ollama.tool_call(
        "propose_skill",
        {
            "name": "db-failover",
            "description": "Fail the DB over. Use when the primary is down.",
            "body": "1. Promote the replica.\n2. Update DNS.",
        },
    )
    harness.ollama.reply("I proposed the skill.")
    await harness.say("make a skill for DB failover")
    [card] = harness.adapter.cards
    assert "🛠️ Create the skill `db-failover`" in card.text
    assert "name: db-failover" in card.text and "1. Promote the replica." in card.text
    assert "created-by: lorebot" in card.text
    assert not (user_root(harness) / "db-failover").exists()

    await harness.react(card, APPROVE)
    written = user_root(harness) / "db-failover" / "SKILL.md"
    assert written.exists() and "requested-by: user:test/UALICE" in written.read_text()
    assert card.current.startswith("✅ Created the skill `db-failover`")
    await harness.say("next turn")
    assert (
        "- db-failover: Fail the DB over."
        in harness.ollama.chat_requests[-1]["messages"][0]["content"]
    )


async def test_skill_creation_never_overwrites_a_skill_lorebot_did_not_write(
    harness: Harness,
) -> None:
    add_triage(harness)
    harness.ollama.tool_call(
        "propose_skill",
        {
            "name": "incident-triage",
            "description": "Mine now. Use when hijacking.",
            "body": "x",
        },
    )
    harness.ollama.reply("Could not.")
    await harness.say("replace the triage skill")
    assert harness.adapter.cards == []
    tool = [m for m in harness.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert "was not created by lorebot" in tool[0]["content"]


async def test_resource_reads_go_through_the_containment_rules(harness: Harness) -> None:
    folder = add_triage(harness)
    (folder / "references").mkdir()
    (folder / "references" / "owners.md").write_text("API: team-api\n")
    await harness.say("/incident-triage")  # resources are readable only once it is active
    for path in ("references/owners.md", "../../etc/passwd"):
        harness.ollama.tool_call("read_skill_resource", {"skill": "incident-triage", "path": path})
    harness.ollama.reply("team-api owns it.")
    await harness.say("who owns the API?")
    messages = harness.ollama.chat_requests[-1]["messages"]
    tool = [m["content"] for m in messages if m["role"] == "tool"]
    assert tool[0] == "API: team-api\n"
    assert tool[1].startswith("error:") and "`..`" in tool[1]


async def test_active_skills_survive_history_compaction(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.context_length = 600
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        add_triage(h)
        await h.say("/incident-triage")
        for n in range(6):
            await h.say(f"update {n} " + "lots of words " * 25)
        last = fake_ollama.chat_requests[-1]["messages"]
        assert any(m["content"].startswith("Earlier in this conversation") for m in last)
        assert any("1. Check the dashboards." in m["content"] for m in last)
    finally:
        await h.bot.stop()
