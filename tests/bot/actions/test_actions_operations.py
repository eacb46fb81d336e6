"""Actions as an operator meets them: a real stdio MCP server started by the daemon with
only the environment it is given, restarted when it dies, checked by `lorebot doctor`,
and the audit in `lorebot actions` and in the channel's digest."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.base import ALWAYS, APPROVE
from bot.cli.main import main
from tests.fakes.mcp_ops import make_server
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.mcp import stdio_server

SECRET = "ops-secret-value-4821"


@pytest.fixture
async def stdio(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    monkeypatch.setenv("OPS_TEST_TOKEN", SECRET)
    server = stdio_server(env={"OPS_TOKEN": "${OPS_TEST_TOKEN}"})
    h = await start_harness(tmp_path, fake_ollama, clock, mcp={"servers": [server]})
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(20)
        yield h
    finally:
        await h.bot.stop()


async def _ask(h: Harness, tool: str) -> str:
    h.ollama.tool_call(tool, {})
    h.ollama.reply("done")
    await h.say(f"run {tool}")
    messages = h.ollama.chat_requests[-1]["messages"]
    content: str = [m for m in messages if m["role"] == "tool"][-1]["content"]
    return content


async def test_a_stdio_server_gets_only_the_environment_it_is_given(
    stdio: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    names = (await _ask(stdio, "ops__environment")).split()
    assert "OPS_TOKEN" in names  # the secret it was given, by reference
    assert "OPS_TEST_TOKEN" not in names and not any(n.startswith("LOREBOT_") for n in names)
    assert all(SECRET not in record.getMessage() for record in caplog.records)


async def test_a_server_that_dies_is_unavailable_then_restarted(stdio: Harness) -> None:
    server = stdio.bot.mcp.servers["ops"]
    pid = int(await _ask(stdio, "ops__pid"))
    os.kill(pid, signal.SIGKILL)
    for _ in range(200):  # the keep-alive notices within a few seconds
        if not server.connected:
            break
        await asyncio.sleep(0.05)

    told = await _ask(stdio, "ops__pid")  # the turn goes on without it
    assert "unavailable" in told or "outcome unknown" in told
    assert stdio.adapter.replies[-1] == "done"

    assert await server.wait_connected(20)
    assert int(await _ask(stdio, "ops__pid")) != pid


async def test_doctor_lists_servers_that_work_and_says_why_one_does_not(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = {"name": "broken", "command": str(env / "no-such-server")}
    monkeypatch.setenv("LOREBOT_MCP__SERVERS", json.dumps([stdio_server(), broken]))
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")
    await asyncio.to_thread(main, ["doctor"])
    out = capsys.readouterr().out
    [ok] = [line for line in out.splitlines() if "MCP ops" in line]
    assert ok.startswith("✓ MCP ops: connected, 13 tools") and "restart" in ok
    [bad] = [line for line in out.splitlines() if "MCP broken" in line]
    assert bad.startswith("✗ MCP broken:") and "no-such-server" in bad
    assert "fix: run" in out


@pytest.fixture
async def ops(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Harness]:
    server, _ = make_server()
    digests = {"digests": [{"channel": "channel:test/C1", "cron": "0 9 * * *"}]}
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        mcp_targets={"ops": server},
        mcp={"servers": [{"name": "ops", "command": "in-process"}]},
        jobs=digests,
    )
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(h.bot.settings.database.path))
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(5)
        yield h
    finally:
        await h.bot.stop()


async def test_actions_list_allowances_and_revoke_from_the_shell(
    ops: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    ops.ollama.tool_call("ops__restart", {"service": "web", "force": True})
    await ops.say("restart web, force it")
    ops.ollama.reply("Restarted.")
    await ops.react(ops.adapter.cards[-1], ALWAYS, user="UADMIN")

    assert await asyncio.to_thread(main, ["actions", "list", "--json"]) == 0
    [action] = json.loads(capsys.readouterr().out)
    assert action["tool"] == "ops__restart" and action["outcome"] == "ok"
    assert action["arguments"] == {"force": True, "service": "web"}
    assert action["requester"] == "user:test/UALICE" and action["decided_by"] == "user:test/UADMIN"
    assert action["channel"] == "channel:test/C1" and action["duration_ms"] >= 0

    assert await asyncio.to_thread(main, ["actions", "allowances"]) == 0
    listed = capsys.readouterr().out
    assert "ops__restart in channel:test/C1, by user:test/UADMIN" in listed
    allowance_id = listed.split()[0].lstrip("#")
    assert await asyncio.to_thread(main, ["actions", "revoke", allowance_id]) == 0
    assert await ops.bot.actions.fetch_allowances() == []
    assert await asyncio.to_thread(main, ["actions", "revoke", allowance_id]) == 1
    capsys.readouterr()

    ops.ollama.tool_call("ops__restart", {"service": "api"})
    await ops.say("restart api")
    assert len(ops.adapter.cards) == 2  # asks on a card again


async def test_the_channels_digest_lists_its_actions(ops: Harness) -> None:
    ops.ollama.tool_call("ops__restart", {"service": "web"})
    await ops.say("restart web")
    ops.ollama.reply("Restarted.")
    await ops.react(ops.adapter.cards[-1], APPROVE)
    ops.clock.advance(hours=1)
    job = ops.bot.jobs.jobs["digest"]
    await ops.bot.jobs.run(job, "channel:test/C1", ops.clock.now)
    [digest] = [s.text for s in ops.adapter.sent if s.text.startswith("📰")]
    assert "action `ops__restart`: ok, asked by user:test/UALICE" in digest
    assert "approved by user:test/UALICE" in digest


async def test_a_server_that_crashes_mid_call_is_outcome_unknown_and_comes_back(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    server = stdio_server(allow=["slow"])
    h = await start_harness(tmp_path, fake_ollama, clock, mcp={"servers": [server]})
    try:
        ops = h.bot.mcp.servers["ops"]
        assert await ops.wait_connected(20)
        pid = int(await _ask(h, "ops__pid"))
        h.ollama.tool_call("ops__slow", {"seconds": 30})
        h.ollama.reply("I cannot tell whether it finished.")
        turn = asyncio.ensure_future(h.say("run the slow job"))
        for _ in range(400):  # until the call is in flight on the server
            if any(a.outcome == "running" for a in await h.bot.actions.fetch_recent()):
                break
            await asyncio.sleep(0.025)
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(turn, 20)

        slow = next(a for a in await h.bot.actions.fetch_recent() if a.tool == "ops__slow")
        assert slow.outcome == "unknown"
        told = [m for m in h.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"][-1]
        assert told["content"].startswith("outcome unknown")
        assert await ops.wait_connected(20)
        assert int(await _ask(h, "ops__pid")) != pid
    finally:
        await h.bot.stop()
