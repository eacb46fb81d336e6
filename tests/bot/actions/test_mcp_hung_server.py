"""An MCP server that starts but never answers: each attempt to connect gives up after
`mcp.connect_timeout_s` and its process is stopped, and lorebot still stops promptly."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.polling import until


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead but not yet reaped by its parent.
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def started(pids: Path) -> list[int]:
    """The servers' process ids, in the order they were started."""
    return [int(p) for p in pids.read_text().split()] if pids.exists() else []


def mute_server(pids: Path) -> dict[str, object]:
    """A server whose shell never answers, with a child process holding its pipes."""
    script = f'echo $$ >> "{pids}"; while true; do sleep 0.05; done'
    return {"name": "mute", "command": "/bin/sh", "args": ["-c", script]}


async def start_with_mute_server(
    tmp_path: Path, fake: FakeOllama, clock: FakeClock
) -> tuple[Harness, Path]:
    """lorebot with the mute server, given 0.3 s to answer; where its pids are written."""
    pids = tmp_path / "pids"
    servers = {"servers": [mute_server(pids)], "connect_timeout_s": 0.3}
    return await start_harness(tmp_path, fake, clock, mcp=servers), pids


async def test_a_server_that_never_answers_is_stopped_each_time(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, pids = await start_with_mute_server(tmp_path, fake_ollama, clock)
    try:
        await until(lambda: len(started(pids)) >= 2, 30)  # it gave up once and tried again
        first = started(pids)[0]
        await until(lambda: not alive(first), 30)  # the attempt it gave up on was stopped
        mute = h.bot.mcp.servers["mute"]
        assert "no answer within 0.3 s" in mute.reason
        # Stopped between attempts: a stop while the SDK spawns a process leaves a pipe to
        # the garbage collector (the SDK's own gap), which this test would report.
        await until(lambda: mute.status == "down", 30)
    finally:
        async with asyncio.timeout(15):
            await h.bot.stop()
    assert not any(alive(pid) for pid in started(pids))


async def test_a_stop_while_a_mute_server_is_being_given_up_on_is_prompt(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h, pids = await start_with_mute_server(tmp_path, fake_ollama, clock)
    await until(lambda: started(pids), 30)
    # Past the connect timeout and inside the 2 s the SDK gives a server to exit.
    await asyncio.sleep(0.8)
    async with asyncio.timeout(15):  # the SDK allows a server 2 s, then kills it
        await h.bot.stop()
    assert not any(alive(pid) for pid in started(pids))
