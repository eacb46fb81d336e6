"""An action card decided right after lorebot restarts, before its MCP server has
connected again: the run waits for the server, and runs once it is back; a server that
does not come back within `mcp.connect_timeout_s` leaves the action recorded as not run."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from adapters.base import APPROVE
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.mcp import stdio_server


def gated_server(gate: Path) -> dict[str, object]:
    """The fake ops server, started only once the file `gate` exists."""
    script = f'while [ ! -e "{gate}" ]; do sleep 0.05; done; exec "$0" -m tests.fakes.mcp_ops'
    return stdio_server(command="/bin/sh", args=["-c", script, sys.executable])


async def card_before_restart(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, server: dict[str, object]
) -> Harness:
    """A restart card for ops__restart of `server`, left undecided by a lorebot that then
    stopped."""
    h = await start_harness(tmp_path, fake_ollama, clock, mcp={"servers": [server]})
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(20)
        h.ollama.tool_call("ops__restart", {"service": "web"})
        await h.say("restart web")
        assert "`restart` on the MCP server `ops`" in h.adapter.cards[-1].text
    finally:
        await h.bot.stop()
    return h


def told(h: Harness) -> str:
    messages = h.ollama.chat_requests[-1]["messages"]
    content: str = [m for m in messages if m["role"] == "tool"][-1]["content"]
    return content


async def test_an_action_approved_before_its_server_reconnects_runs_once_it_is_back(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    gate = tmp_path / "server-may-start"
    gate.touch()
    first = await card_before_restart(tmp_path, fake_ollama, clock, gated_server(gate))
    gate.unlink()  # the same server, slow to start this time
    h = await start_harness(
        tmp_path, fake_ollama, clock, first.adapter, mcp={"servers": [gated_server(gate)]}
    )
    try:
        h.ollama.reply("web is restarting.")
        decision = asyncio.create_task(h.react(first.adapter.cards[-1], APPROVE))
        gate.touch()  # the server starts only now, well after the ✅ arrived
        await asyncio.wait_for(decision, 60)
        assert told(h) == "restarted web"
        [action] = await h.bot.actions.fetch_recent()
        assert (action.tool, action.outcome) == ("ops__restart", "ok")
        assert h.adapter.replies[-1] == "web is restarting."
    finally:
        await h.bot.stop()


async def test_a_server_that_stays_away_leaves_the_action_recorded_as_not_run(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    gate = tmp_path / "server-may-start"
    gate.touch()
    first = await card_before_restart(tmp_path, fake_ollama, clock, gated_server(gate))
    gate.unlink()  # the same server, which now never starts
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        first.adapter,
        mcp={"servers": [gated_server(gate)], "connect_timeout_s": 0.5},
    )
    try:
        h.ollama.reply("I could not restart web: its tools are not available.")
        await h.react(first.adapter.cards[-1], APPROVE)
        assert told(h) == "error: the tool ops__restart is not available, so it was not run"
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "error" and action.output.startswith("not run")
    finally:
        await h.bot.stop()


async def test_an_action_whose_tool_its_connected_server_dropped_is_not_run_at_once(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    first = await card_before_restart(tmp_path, fake_ollama, clock, stdio_server())
    upgraded = stdio_server(env={"OPS_WITHOUT": "restart"})  # back without that tool
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        first.adapter,
        mcp={"servers": [upgraded], "connect_timeout_s": 60},
    )
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(20)
        h.ollama.reply("I could not restart web: its tool is gone.")
        async with asyncio.timeout(15):  # not the minute a reconnecting server gets
            await h.react(first.adapter.cards[-1], APPROVE)
        assert told(h) == "error: the tool ops__restart is not available, so it was not run"
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "error" and action.output.startswith("not run")
    finally:
        await h.bot.stop()
