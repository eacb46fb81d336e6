"""A NUL character (U+0000) through the real core, on both engines: PostgreSQL can keep
none, so the store turns each into U+FFFD on every engine alike (docs/memory.md). A
person's note holding one is saved, a model's answer holding one is kept in history, and
an MCP tool or a skill script whose output holds one (a process's `/proc/PID/cmdline`)
ends its audit row `ok`, with that output, and the model gets it. An output the store
refuses all the same still ends its row, with a note in the output's place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.base import APPROVE
from memory import Scope
from tests.fakes.mcp_ops import make_server
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.scripts import _run as run_script
from tests.support.scripts import _start as start_script_harness

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

CHANNEL = Scope.parse("channel:test/C1")
CMDLINE = "python3\x00-m\x00ops\x00"
SHOWN_CMDLINE = "python3\ufffd-m\ufffdops\ufffd"
REFUSED = "(the output could not be recorded: ValueError)"


async def test_a_note_with_nul_in_its_summary_and_body_is_saved_on_approval(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        h.script_title("build-id", "the build id is a\x00b")
        await h.say("remember that the build id is a\x00b")
        [card] = h.adapter.cards
        await h.react(card, APPROVE)

        assert card.current.startswith("✅ Saved `build-id`")
        note = await h.bot.notes.fetch(CHANNEL, "build-id")
        assert note is not None
        assert (note.summary, note.body) == (
            "the build id is a\ufffdb",
            "the build id is a\ufffdb",
        )
        [change] = await h.bot.notes.fetch_history(CHANNEL, "build-id")
        assert change.after is not None and change.after["body"] == "the build id is a\ufffdb"
    finally:
        await h.bot.stop()


async def test_a_model_answer_with_nul_is_posted_and_kept_in_history(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.reply("The separator is \x00 here.")
        await h.say("what separates the fields?")
        assert len(h.adapter.replies) == 1
        assert "sorry" not in h.adapter.replies[0].lower()
        entries = (await h.bot.log.fetch_history("test/C1/")).entries
        assert [(e.role, e.content) for e in entries] == [
            ("user", "what separates the fields?"),
            ("assistant", "The separator is \ufffd here."),
        ]
    finally:
        await h.bot.stop()


async def _with_cmdline_tool(tmp_path: Path, fake: FakeOllama, clock: FakeClock) -> Harness:
    """A bot whose ops server has a `cmdline` tool, allowed to run without a card."""
    server, _ = make_server()
    server.add_tool(lambda: CMDLINE, name="cmdline", description="A process's command line.")
    ops = {"servers": [{"name": "ops", "command": "in-process", "allow": ["cmdline"]}]}
    h = await start_harness(tmp_path, fake, clock, mcp_targets={"ops": server}, mcp=ops)
    if not await h.bot.mcp.servers["ops"].wait_connected(5):
        await h.bot.stop()
        pytest.fail("the in-process MCP server did not connect within 5 s")
    return h


async def _ask_for_the_cmdline(h: Harness) -> None:
    h.ollama.tool_call("ops__cmdline", {})
    h.ollama.reply("It runs python3 -m ops.")
    await h.say("what command line does ops run?")
    told = [m["content"] for m in h.last_prompt() if m["role"] == "tool"]
    assert told == [CMDLINE]
    assert h.adapter.replies == ["It runs python3 -m ops."]


async def test_a_tool_whose_output_holds_nul_ends_ok_and_the_model_gets_it(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await _with_cmdline_tool(tmp_path, fake_ollama, clock)
    try:
        await _ask_for_the_cmdline(h)
        [action] = await h.bot.actions.fetch_recent()
        assert (action.outcome, action.output) == ("ok", SHOWN_CMDLINE)
    finally:
        await h.bot.stop()


def _refuse_outputs_with_nul(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the action log refuse an output holding a NUL, as PostgreSQL's driver did."""
    store = type(h.bot.actions)
    finish = store.finish

    async def refusing(self: Any, action_id: int, outcome: str, output: str, ms: int) -> Any:
        if "\x00" in output:
            raise ValueError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return await finish(self, action_id, outcome, output, ms)

    monkeypatch.setattr(store, "finish", refusing)


async def test_an_output_the_store_refuses_still_ends_its_action_with_a_note(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = await _with_cmdline_tool(tmp_path, fake_ollama, clock)
    _refuse_outputs_with_nul(h, monkeypatch)
    try:
        await _ask_for_the_cmdline(h)
        [action] = await h.bot.actions.fetch_recent()
        assert (action.outcome, action.output) == ("ok", REFUSED)
    finally:
        await h.bot.stop()


@pytest.mark.parametrize("refused", [False, True], ids=["kept", "refused"])
async def test_a_script_whose_output_holds_nul_ends_ok_and_the_model_gets_it(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    refused: bool,
) -> None:
    h = await start_script_harness(tmp_path, fake_ollama, clock, "host")
    if refused:
        _refuse_outputs_with_nul(h, monkeypatch)
    try:
        told = await run_script(h, code='import sys\nsys.stdout.write("a\\0b\\n")\n')
        assert told.strip() == "a\x00b"
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "ok"
        assert action.output.strip() == (REFUSED if refused else "a\ufffdb")
    finally:
        await h.bot.stop()
