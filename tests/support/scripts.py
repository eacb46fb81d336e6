"""Skill scripts through the running core: a skill with a script, a bot that runs scripts
in a given mode, and a run asked for by the model and approved on its card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.base import APPROVE
from tests.fakes.adapter import Sent
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.skills import write_skill

HELLO = 'import sys\nprint("hello from the script", *sys.argv[1:])\n'


def _skill(h: Harness, code: str = HELLO, script: str = "hello.py") -> Path:
    folder = write_skill(h.bot.settings.skills.home_root, "hello", body="Say hello with a script.")
    (folder / "scripts").mkdir(exist_ok=True)
    (folder / "scripts" / script).write_text(code)
    return folder


async def _start(
    tmp_path: Path, fake: FakeOllama, clock: FakeClock, mode: str, **skills: Any
) -> Harness:
    return await start_harness(tmp_path, fake, clock, skills={"scripts": mode, **skills})


def _tools_offered(h: Harness) -> set[str]:
    return {t["function"]["name"] for t in h.ollama.chat_requests[-1].get("tools") or []}


def _told(h: Harness) -> str:
    """What the model was told last: the tool result of the resumed turn."""
    message = h.ollama.chat_requests[-1]["messages"][-1]
    assert message["role"] == "tool" and message["tool_name"] == "run_skill_script"
    content: str = message["content"]
    return content


async def _ask_to_run(h: Harness, args: list[str] | None = None, script: str = "hello.py") -> Sent:
    """Start the skill with /hello, then have the model call run_skill_script: the card."""
    await h.say("/hello")
    arguments: dict[str, Any] = {"skill": "hello", "script": f"scripts/{script}"}
    if args is not None:
        arguments["args"] = args
    h.ollama.tool_call("run_skill_script", arguments)
    await h.say("run the hello script")
    assert "run_skill_script" in _tools_offered(h)
    return h.adapter.cards[-1]


async def _run(h: Harness, args: list[str] | None = None, code: str = HELLO) -> str:
    """Ask for a run, approve its card, and return what the model was told."""
    _skill(h, code)
    card = await _ask_to_run(h, args)
    h.ollama.reply("Done.")
    await h.react(card, APPROVE)
    return _told(h)
