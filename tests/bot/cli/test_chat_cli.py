"""`lorebot chat` driven by piped stdin, and `lorebot proposals` for admins."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.fakes.ollama import FakeOllama

SCRIPT = """\
remember that the staging DB is pg-stage-2
y
what do you remember
where is the staging database?
undo
what do you remember
"""


async def run_cli(argv: list[str]) -> int:
    """Run the real entry point in a thread: it owns its own event loop."""
    import asyncio

    return await asyncio.to_thread(main, argv)


async def test_piped_chat_drives_a_whole_conversation(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    monkeypatch.setattr("sys.stdin", io.StringIO(SCRIPT))
    fake_ollama.reply(json.dumps({"topic": "staging-db", "summary": "staging DB is pg-stage-2"}))
    fake_ollama.reply("The staging database is pg-stage-2.")

    assert await run_cli(["chat", "--user", "alice"]) == 0
    out = capsys.readouterr().out
    assert "📝 Save this note?" in out and "Topic: `staging-db`" in out
    assert "answer: y = ✅ approve, n = ❌ discard" in out
    assert "✅ Saved `staging-db` in your notes (user:console/alice)" in out
    assert "lorebot> The staging database is pg-stage-2." in out
    assert "↩️ Undone. Removed `staging-db`" in out
    assert out.rstrip().endswith(
        "I have no notes for this conversation yet. Say `remember that …` to add one."
    )
    question = [r for r in fake_ollama.chat_requests if "format" not in r][-1]
    assert "staging-db" in question["messages"][-1]["content"]


async def test_chat_without_ollama_still_saves_and_answers_from_memory(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr("sys.stdin", io.StringIO(SCRIPT))
    assert await run_cli(["chat", "--user", "alice", "--channel", "ops"]) == 0
    out = capsys.readouterr().out
    assert "✅ Saved" in out and "this channel (channel:console/ops)" in out
    assert "My model is unreachable right now" in out and "staging" in out


async def test_without_ollama_a_note_answers_every_question_about_it(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # nothing listens there
    script = "remember that lunch is at noon\ny\nwhen is lunch?\nwhen is lunch?\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    assert await run_cli(["chat", "--user", "alice"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("when is lunch?\n"))  # a new chat, same history
    assert await run_cli(["chat", "--user", "alice"]) == 0
    out = capsys.readouterr().out
    answers = re.findall(r"These notes may help:\n• `[a-z-]+`: lunch is at noon\n", out)
    assert len(answers) == 3, out
    assert "I found nothing in my notes" not in out


async def test_admin_proposals_list_approve_reject(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")
    monkeypatch.setattr(
        "sys.stdin",
        io.StringIO("remember that A is 1\nremember that B is 2\nremember that C is 3\n"),
    )
    assert await run_cli(["chat", "--user", "bob"]) == 0
    capsys.readouterr()

    assert await run_cli(["proposals", "list"]) == 0
    listing = capsys.readouterr().out
    assert listing.count("pending") == 3

    assert await run_cli(["proposals", "approve", "1"]) == 0
    assert capsys.readouterr().out.startswith("✅ Saved")
    assert await run_cli(["proposals", "reject", "2"]) == 0
    assert capsys.readouterr().out.startswith("❌ Discarded")
    assert await run_cli(["proposals", "approve", "1"]) == 1
    assert "already approved" in capsys.readouterr().err

    assert await run_cli(["notes", "list"]) == 0
    notes = capsys.readouterr().out
    assert "user:console/bob (1 note)" in notes
