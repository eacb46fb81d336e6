"""Approval cards where they are easy to get wrong: a public save beside private notes of
the same topic, a skill card from its first line to a write that fails, and ♾️ on an
action's card from someone who may not give it."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.base import ALWAYS, APPROVE
from memory import Scope
from tests.fakes.mcp_ops import make_server
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.skills import write_skill

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

ALICE = Scope.parse("user:test/UALICE")
CHANNEL = Scope.parse("channel:test/C1")
# 64 characters, the longest topic, with a dash where `-2` must be cut in.
LONG_TOPIC = "staging-database-failover-runbook-for-the-billing-api-gateway-eu"
FAILOVER_SKILL = {
    "name": "db-failover",
    "description": "Fail the DB over. Use when the primary is down.",
    "body": "1. Promote the replica.\n2. Update DNS.",
}


async def _remember(h: Harness, topic: str, summary: str, *, dm: bool = False) -> None:
    """Alice asks for a note of her own and approves its card."""
    h.script_title(topic, summary)
    await h.say(f"remember that my {summary}", dm=dm)
    await h.react(h.adapter.cards[-1], APPROVE)


async def test_a_public_save_takes_the_next_free_topic_beside_a_private_note(
    harness: Harness,
) -> None:
    await _remember(harness, "locker-code", "locker code is 4711", dm=True)
    await _remember(harness, "locker-code", "locker is in room 2")
    assert await harness.bot.notes.fetch(ALICE, "locker-code-2") is not None

    harness.script_title("locker-code", "locker moved to room 3")
    await harness.say("remember that my locker moved to room 3")
    card = harness.adapter.cards[-1]
    assert "📝 Save this note?" in card.text and "Topic: `locker-code-3`" in card.text


async def test_a_long_topic_is_cut_to_fit_its_number(harness: Harness) -> None:
    # The topic is the person's words, so lorebot keeps the model's draft of it.
    runbook = "staging database failover runbook for the billing api gateway eu"
    await _remember(harness, LONG_TOPIC, f"{runbook} is private", dm=True)

    harness.script_title(LONG_TOPIC, "failover runbook is in the wiki")
    await harness.say(f"remember that my {runbook} is in the wiki")
    card = harness.adapter.cards[-1]
    free = "staging-database-failover-runbook-for-the-billing-api-gateway-2"
    assert f"Topic: `{free}`" in card.text
    await harness.react(card, APPROVE)
    assert await harness.bot.notes.fetch(ALICE, free) is not None


async def test_a_card_that_updates_a_note_applies_and_says_updated(harness: Harness) -> None:
    harness.script_title("standup", "standup is at 10")
    await harness.say("remember that standup is at 10")
    await harness.react(harness.adapter.cards[-1], APPROVE)

    harness.script_title("standup", "standup moved to 11")
    await harness.say("remember that standup moved to 11")
    card = harness.adapter.cards[-1]
    assert card.text.startswith("📝 Update this note? (proposal #2)")
    await harness.react(card, APPROVE)
    assert card.current.startswith(
        "✅ Updated `standup` in this channel (channel:test/C1): standup moved to 11"
    )
    note = await harness.bot.notes.fetch(CHANNEL, "standup")
    assert note is not None and note.summary == "standup moved to 11"


def _steps(count: int) -> str:
    return "\n".join(f"{n}. step number {n}" for n in range(1, count + 1))


@pytest.mark.parametrize(("steps", "more"), [(7, None), (10, "> … (3 more lines)")])
async def test_a_card_quotes_eight_lines_of_a_long_note_and_counts_the_rest(
    harness: Harness, steps: int, more: str | None
) -> None:
    harness.script_title("deploy-steps", "how we deploy")
    await harness.say(f"remember that the deploy steps are:\n{_steps(steps)}")
    lines = harness.adapter.cards[-1].text.splitlines()
    quoted = [line for line in lines if line.startswith("> ")]
    assert quoted[:2] == ["> the deploy steps are:", "> 1. step number 1"]
    assert quoted[7] == "> 7. step number 7"
    assert quoted[8:] == ([more] if more else [])
    assert lines[-1].startswith("React ✅ to save or ❌ to discard.")


async def test_a_forget_card_shows_the_note_line_by_line_and_how_to_decide(
    harness: Harness,
) -> None:
    harness.script_title("oncall-phone", "the oncall phone is in drawer 3")
    await harness.say("remember that the oncall phone is in drawer 3")
    await harness.react(harness.adapter.cards[-1], APPROVE)
    await harness.say("forget the oncall phone")
    assert harness.adapter.cards[-1].text.splitlines() == [
        "🗑️ Forget this note? (proposal #2)",
        "Where: this channel (channel:test/C1)",
        "Topic: `oncall-phone`",
        "Summary: the oncall phone is in drawer 3",
        "React ✅ to forget or ❌ to discard. Only ualice or an admin can decide; "
        "this expires in 24 h.",
    ]


async def test_a_skill_load_card_starts_with_its_question_and_ends_with_how_to_decide(
    harness: Harness,
) -> None:
    write_skill(
        harness.bot.settings.skills.user_root,
        "incident-triage",
        description="Triage a production incident. Use when something is down.",
        body="1. Check the dashboards.",
    )
    harness.ollama.tool_call("load_skill", {"name": "incident-triage"})
    await harness.say("the API is down, what do I do?")
    lines = harness.adapter.cards[-1].text.splitlines()
    assert lines[0] == "🧩 Load the skill `incident-triage`? (proposal #1)"
    assert lines[1].startswith("Description: Triage a production incident.")
    assert lines[-1].startswith("React ✅ to load it or ❌ to discard.")


async def test_a_skill_card_says_where_it_goes_and_how_to_decide(harness: Harness) -> None:
    harness.ollama.tool_call("propose_skill", FAILOVER_SKILL)
    harness.ollama.reply("I proposed the skill.")
    await harness.say("make a skill for DB failover")
    [card] = harness.adapter.cards
    where = harness.bot.settings.skills.user_root / "db-failover"
    assert card.text.startswith(f"🛠️ Create the skill `db-failover` in {where}? (proposal #1)")
    assert card.text.endswith(
        "React ✅ to create it or ❌ to discard. Only ualice or an admin can decide; "
        "this expires in 24 h."
    )
    tool = [m for m in harness.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert tool[-1]["content"] == "proposal #1 shows the whole skill on a card for approval"


async def test_a_skill_that_cannot_be_written_is_reported_on_its_card(harness: Harness) -> None:
    harness.ollama.tool_call("propose_skill", FAILOVER_SKILL)
    harness.ollama.reply("I proposed the skill.")
    await harness.say("make a skill for DB failover")
    [card] = harness.adapter.cards
    # Someone writes a skill of that name by hand before the card is approved.
    folder = harness.bot.settings.skills.user_root / "db-failover"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: db-failover\n---\nmine\n")

    await harness.react(card, APPROVE)
    assert card.current.startswith(
        "⚠️ Not applied (proposal #1): not written: a skill named 'db-failover' already exists"
    )
    assert (folder / "SKILL.md").read_text().endswith("mine\n")
    proposal = await harness.bot.proposals.fetch(1)
    assert proposal.status == "failed"


@pytest.fixture
async def ops(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> AsyncIterator[Harness]:
    """A bot with the operator's MCP server `ops` connected."""
    server, _ = make_server()
    config = {"name": "ops", "command": "unused-in-process"}
    h = await start_harness(
        tmp_path, fake_ollama, clock, mcp_targets={"ops": server}, mcp={"servers": [config]}
    )
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(5)
        yield h
    finally:
        await h.bot.stop()


async def test_a_requesters_infinity_is_ignored_with_a_reason_and_an_admins_is_recorded(
    ops: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.approvals.service")
    ops.ollama.tool_call("ops__restart", {"service": "web"})
    await ops.say("restart web")
    card = ops.adapter.cards[-1]
    assert card.text.splitlines()[-1].startswith("React ✅ to run it or ❌ to discard.")
    await ops.react(card, ALWAYS)
    [ignored] = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert ignored == "ignored ♾️ on proposal 1 by user:test/UALICE: only admins, on actions"

    ops.ollama.reply("Restarted.")
    await ops.react(card, ALWAYS, user="UADMIN")
    [action] = await ops.bot.actions.fetch_recent()
    assert (action.outcome, action.decided_by) == ("ok", "user:test/UADMIN")
    [allowed] = [r.getMessage() for r in caplog.records if " allowed " in r.getMessage()]
    assert allowed == "user:test/UADMIN allowed ops__restart in channel:test/C1 (allowance 1)"


async def test_an_action_too_long_for_a_card_is_refused_before_any_card(ops: Harness) -> None:
    ops.ollama.tool_call("ops__restart", {"service": "web-" + "x" * 2000})
    ops.ollama.reply("That name is too long to ask about.")
    await ops.say("restart the long one")
    assert ops.adapter.cards == []
    told = [m for m in ops.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert told[-1]["content"].startswith("error: the arguments are too long to show on a card")


async def test_a_card_fits_with_room_for_its_footer(harness: Harness) -> None:
    approvals, adapter = harness.bot.approvals, harness.adapter
    here = adapter.message("hi").conversation
    room = adapter.max_message_chars - 200
    assert approvals.fits_card(here, "x" * room) and not approvals.fits_card(here, "x" * (room + 1))
    elsewhere = dataclasses.replace(here, platform="nowhere")  # no adapter: 4,000 characters
    assert approvals.fits_card(elsewhere, "x" * 3800)
    assert not approvals.fits_card(elsewhere, "x" * 3801)


async def test_an_approved_action_that_fails_says_so_on_its_card(ops: Harness) -> None:
    ops.ollama.tool_call("ops__fail", {"service": "web"})
    await ops.say("try the failing one")
    card = ops.adapter.cards[-1]
    ops.ollama.reply("It failed.")
    await ops.react(card, APPROVE)
    assert card.current.startswith(
        "⚠️ Ran `fail` on `ops` (proposal #1): the tool reported a failure in "
    )
    assert card.current.splitlines()[0].endswith(" ms.")
