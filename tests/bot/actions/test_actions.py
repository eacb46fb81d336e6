"""Actions through the running core: the model calls the operator's MCP tools (a real MCP
server), and nothing with side effects runs until a person clicks ✅ on a card that shows
exactly what will run."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.base import ALWAYS, APPROVE, REJECT
from tests.fakes.adapter import Sent
from tests.fakes.mcp_ops import LEAKED_TOKEN, make_server
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness


async def _start(
    tmp_path: Path, fake: FakeOllama, clock: FakeClock, **server: Any
) -> tuple[Harness, Counter[str]]:
    ops, ran = make_server()
    config = {"name": "ops", "command": "unused-in-process", **server}
    h = await start_harness(
        tmp_path, fake, clock, mcp_targets={"ops": ops}, mcp={"servers": [config]}
    )
    if not await h.bot.mcp.servers["ops"].wait_connected(5):
        await h.bot.stop()
        pytest.fail("the in-process MCP server did not connect within 5 s")
    return h, ran


@pytest.fixture
async def ops(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[tuple[Harness, Counter[str]]]:
    h, ran = await _start(tmp_path, fake_ollama, clock)
    try:
        yield h, ran
    finally:
        await h.bot.stop()


def _tools_offered(h: Harness) -> set[str]:
    return {t["function"]["name"] for t in h.ollama.chat_requests[-1]["tools"]}


async def test_a_restart_runs_only_after_the_requesters_approval(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("is the web service healthy? restart it if not")

    [card] = h.adapter.cards
    assert ran["restart"] == 0 and h.adapter.replies == []  # nothing ran, the turn waits
    assert "`restart` on the MCP server `ops`" in card.text
    assert "destructive" in card.text and "Asked by ualice" in card.text
    assert '"service": "web"' in card.text
    [proposal] = await h.bot.proposals.fetch_recent("pending")
    assert f"(proposal #{proposal.id})" in card.text.splitlines()[0]
    assert "expires in 24 h" in card.text
    assert {"ops__restart", "ops__status", "memory_search"} <= _tools_offered(h)

    h.ollama.reply("I restarted web; it is coming back.")
    await h.react(card, APPROVE)
    assert ran["restart"] == 1
    assert h.adapter.replies == ["I restarted web; it is coming back."]
    result = h.ollama.chat_requests[-1]["messages"][-1]
    assert result == {"role": "tool", "tool_name": "ops__restart", "content": "restarted web"}
    assert card.current.startswith("✅ Ran `restart` on `ops`") and " ms." in card.current

    [action] = await h.bot.actions.fetch_recent()
    assert (action.tool, action.outcome, action.approval) == ("ops__restart", "ok", "card")
    assert action.decided_by == "user:test/UALICE" and action.duration_ms is not None
    await h.react(card, APPROVE)  # a second ✅ runs nothing again
    assert ran["restart"] == 1


async def test_a_declined_action_never_runs_and_the_model_is_told(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("restart web")
    h.ollama.reply("OK, I left it alone.")
    await h.react(h.adapter.cards[-1], REJECT)
    assert ran["restart"] == 0
    told = h.ollama.chat_requests[-1]["messages"][-1]["content"]
    assert "declined" in told and "Do not try it again" in told
    assert h.adapter.cards[-1].current.startswith("❌ Declined")
    [action] = await h.bot.actions.fetch_recent()
    assert action.outcome == "declined"


async def test_only_the_requester_or_an_admin_approves(ops: tuple[Harness, Counter[str]]) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("restart web")
    await h.react(h.adapter.cards[-1], APPROVE, user="UMALLORY")
    assert ran["restart"] == 0
    h.ollama.reply("done")
    await h.react(h.adapter.cards[-1], APPROVE, user="UADMIN")
    assert ran["restart"] == 1


async def test_a_server_that_wants_admins_ignores_the_requester(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, ran = await _start(tmp_path, fake_ollama, clock, approvers="admins")
    try:
        h.ollama.tool_call("ops__restart", {"service": "web"})
        await h.say("restart web")
        assert "Only an admin can approve" in h.adapter.cards[-1].text
        await h.react(h.adapter.cards[-1], APPROVE)
        assert ran["restart"] == 0
        h.ollama.reply("done")
        await h.react(h.adapter.cards[-1], APPROVE, user="UADMIN")
        assert ran["restart"] == 1
    finally:
        await h.bot.stop()


async def test_an_untrusted_servers_read_only_hint_still_needs_a_card(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__status", {"service": "web"})
    await h.say("is web healthy?")
    assert ran["status"] == 0 and len(h.adapter.cards) == 1
    assert "read-only" in h.adapter.cards[0].text and "untrusted" in h.adapter.cards[0].text


async def test_a_trusted_read_only_tool_and_an_allowed_tool_run_without_a_card(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, ran = await _start(tmp_path, fake_ollama, clock, trust="trusted", allow=["scale"])
    try:
        h.ollama.tool_call("ops__status", {"service": "web"})
        h.ollama.tool_call("ops__scale", {"service": "web", "replicas": 3})
        h.ollama.tool_call("ops__restart", {"service": "web"})
        await h.say("check web, scale it to 3 and restart it")
        assert (ran["status"], ran["scale"], ran["restart"]) == (1, 1, 0)
        [card] = h.adapter.cards  # the destructive restart still asks
        assert "`restart`" in card.text
        approvals = sorted(a.approval for a in await h.bot.actions.fetch_recent())
        assert approvals == ["allow list", "card", "trusted read-only"]
    finally:
        await h.bot.stop()


async def test_invalid_arguments_go_back_to_the_model_and_post_no_card(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__scale", {"service": "web", "replicas": "many"})
    h.ollama.reply("Sorry, I need a number.")
    await h.say("scale web up a lot")
    assert h.adapter.cards == [] and ran["scale"] == 0
    error = h.ollama.chat_requests[-1]["messages"][-1]["content"]
    assert error.startswith("error: invalid arguments for ops__scale: replicas:")


async def test_the_model_sees_a_flat_schema_with_defaults_in_words(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, _ = ops
    h.ollama.reply("hello")
    await h.say("hi")
    [restart] = [
        t["function"]
        for t in h.ollama.chat_requests[-1]["tools"]
        if t["function"]["name"] == "ops__restart"
    ]
    force = restart["parameters"]["properties"]["force"]
    assert force["type"] == "boolean" and "default false" in force["description"]
    assert restart["parameters"]["required"] == ["service"]
    assert "[destructive]" in restart["description"]


async def test_tool_failures_reach_the_model_as_errors(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, ran = await _start(tmp_path, fake_ollama, clock, allow=["fail", "disk"])
    try:
        h.ollama.tool_call("ops__fail", {"service": "web"})
        h.ollama.tool_call("ops__disk", {})
        h.ollama.reply("Both failed.")
        await h.say("try both")
        messages = h.ollama.chat_requests[-1]["messages"]
        results = [m["content"] for m in messages if m["role"] == "tool"]
        assert results[0].startswith("error: the tool reported a failure")
        assert "no such service: web" in results[0]
        assert results[1].startswith("error: the tool reported a failure: Error: disk full")
        assert sorted(a.outcome for a in await h.bot.actions.fetch_recent()) == ["error", "error"]
    finally:
        await h.bot.stop()


async def test_a_timeout_is_outcome_unknown_and_is_not_retried(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, ran = await _start(tmp_path, fake_ollama, clock, allow=["slow"], timeout_s=0.2)
    try:
        h.ollama.tool_call("ops__slow", {"seconds": 2})
        h.ollama.reply("It may or may not have finished.")
        await h.say("do the slow thing")
        told = h.ollama.chat_requests[-1]["messages"][-1]["content"]
        assert told.startswith("outcome unknown") and "do not call it again" in told
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "unknown" and ran["slow"] == 1
    finally:
        await h.bot.stop()


async def test_a_secret_in_a_tools_output_never_reaches_the_channel_or_the_audit(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    h, _ = await _start(tmp_path, fake_ollama, clock, allow=["config"])
    try:
        h.ollama.tool_call("ops__config", {})
        h.ollama.reply("Here is the config.")
        await h.say("show me the web config")
        told = h.ollama.chat_requests[-1]["messages"][-1]["content"]
        assert LEAKED_TOKEN not in told and "listen=0.0.0.0:80" in told
        [action] = await h.bot.actions.fetch_recent()
        assert LEAKED_TOKEN not in action.output
        assert all(LEAKED_TOKEN not in r.getMessage() for r in caplog.records)
    finally:
        await h.bot.stop()


async def test_an_admins_infinity_approves_and_allows_the_tool_in_that_channel(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("restart web")
    h.ollama.reply("Restarted.")
    await h.react(h.adapter.cards[-1], ALWAYS, user="UADMIN")
    assert ran["restart"] == 1
    [allowance] = await h.bot.actions.fetch_allowances()
    assert (allowance.channel_scope, allowance.tool) == ("channel:test/C1", "ops__restart")

    h.ollama.tool_call("ops__restart", {"service": "api"})
    h.ollama.reply("Restarted api too.")
    await h.say("restart api")
    assert ran["restart"] == 2 and len(h.adapter.cards) == 1  # no new card
    h.ollama.tool_call("ops__restart", {"service": "db"})
    await h.say("restart db", channel="C2")  # another channel still asks
    assert ran["restart"] == 2 and len(h.adapter.cards) == 2


async def test_a_requesters_infinity_is_not_an_allowance(ops: tuple[Harness, Counter[str]]) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("restart web")
    await h.react(h.adapter.cards[-1], ALWAYS)
    assert ran["restart"] == 0 and await h.bot.actions.fetch_allowances() == []


async def test_an_expired_card_is_marked_not_run_and_the_model_is_told(
    ops: tuple[Harness, Counter[str]], clock: FakeClock
) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("restart web")
    clock.advance(hours=25)
    h.ollama.reply("The restart was not approved in time.")
    await h.bot.approvals.expire()
    await h.bot.follow_up()
    card = h.adapter.cards[-1]
    assert card.current.startswith("⌛ Expired") and "not run" in card.current
    assert ran["restart"] == 0
    assert "not run" in h.ollama.chat_requests[-1]["messages"][-1]["content"]
    [action] = await h.bot.actions.fetch_recent()
    assert action.outcome == "expired"


async def test_a_call_changed_after_its_card_is_not_run(ops: tuple[Harness, Counter[str]]) -> None:
    h, ran = ops
    h.ollama.tool_call("ops__restart", {"service": "web"})
    await h.say("restart web")
    [proposal] = await h.bot.proposals.fetch_recent("pending")
    payload = dict(proposal.payload, arguments={"service": "db", "force": True})
    async with h.bot.db.write() as conn:
        await conn.execute(
            "UPDATE proposals SET payload_json = ? WHERE id = ?", (json.dumps(payload), proposal.id)
        )
    h.ollama.reply("It was not run.")
    await h.react(h.adapter.cards[-1], APPROVE)
    assert ran["restart"] == 0
    assert "changed after it was approved" in h.ollama.chat_requests[-1]["messages"][-1]["content"]


async def test_a_server_limited_to_channels_is_offered_only_there(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, _ = await _start(tmp_path, fake_ollama, clock, channels=["channel:test/COPS"])
    try:
        h.ollama.reply("a")
        await h.say("hi", channel="COPS")
        assert "ops__restart" in _tools_offered(h)
        h.ollama.reply("b")
        await h.say("hi", channel="C1")
        assert not any(name.startswith("ops__") for name in _tools_offered(h))
        h.ollama.tool_call("ops__restart", {"service": "web"})
        h.ollama.reply("c")
        await h.say("restart web", channel="C1")
        assert h.adapter.cards == []
    finally:
        await h.bot.stop()


def _card(h: Harness) -> Sent:
    return h.adapter.cards[-1]


async def test_a_secret_in_the_arguments_is_never_shown_logged_or_stored(
    ops: tuple[Harness, Counter[str]], caplog: pytest.LogCaptureFixture
) -> None:
    h, ran = ops
    caplog.set_level("DEBUG")
    h.ollama.tool_call("ops__restart", {"service": f"web --token {LEAKED_TOKEN}"})
    await h.say("restart web with the deploy token")
    card = h.adapter.cards[-1]
    assert LEAKED_TOKEN not in card.text and "[REDACTED]" in card.text
    h.ollama.reply("Restarted.")
    await h.react(card, APPROVE)
    assert ran["restart"] == 1  # it ran with the real arguments
    assert LEAKED_TOKEN not in await _database_text(h)
    assert all(LEAKED_TOKEN not in r.getMessage() for r in caplog.records)
    assert all(LEAKED_TOKEN not in "\n".join([s.text, *s.edits]) for s in h.adapter.sent)


async def _database_text(h: Harness) -> str:
    """Every text value in the tables that hold proposals, actions and history."""
    found = []
    for table in ("proposals", "actions", "messages", "events"):
        async with h.bot.db.conn.execute(f"SELECT * FROM {table}") as cursor:  # noqa: S608
            found += [str(value) for row in await cursor.fetchall() for value in tuple(row)]
    return "\n".join(found)


async def test_a_card_decided_after_a_restart_runs_and_the_turn_resumes(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    first, ran_before = await _start(tmp_path, fake_ollama, clock)
    first.ollama.tool_call("ops__restart", {"service": "web"})
    await first.say("restart web")
    card = first.adapter.cards[-1]
    await first.bot.stop()

    ops, ran = make_server()
    second = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        first.adapter,
        mcp_targets={"ops": ops},
        mcp={"servers": [{"name": "ops", "command": "unused-in-process"}]},
    )
    try:
        assert await second.bot.mcp.servers["ops"].wait_connected(5)
        second.ollama.reply("Restarted web after all.")
        await second.react(card, APPROVE)
        assert ran["restart"] == 1 and ran_before["restart"] == 0
        assert second.adapter.replies[-1] == "Restarted web after all."
        assert card.current.startswith("✅ Ran `restart` on `ops`")
    finally:
        await second.bot.stop()


async def test_the_same_action_again_in_a_turn_shows_no_second_card_and_runs_once(
    ops: tuple[Harness, Counter[str]],
) -> None:
    h, ran = ops
    call = {"function": {"name": "ops__restart", "arguments": {"service": "web"}}}
    h.ollama.reply(tool_calls=[call, call])  # twice in one round
    await h.say("restart web")
    [card] = h.adapter.cards
    h.ollama.tool_call("ops__restart", {"service": "web"})  # and again after the decision
    h.ollama.reply("I restarted web.")
    await h.react(card, APPROVE)
    assert ran["restart"] == 1 and len(h.adapter.cards) == 1
    told = [m["content"] for m in h.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert told[0] == "restarted web"
    assert all(t.startswith("You already called ops__restart") for t in told[1:]) and told[1:]
    assert h.adapter.replies == ["I restarted web."]
    [action] = await h.bot.actions.fetch_recent()
    assert action.outcome == "ok"
