"""Skill scripts under attack, through the running core: a skill whose folders are links to
the host.

Each test has the model ask for a run and a person answer the card, as in chat; what must
hold is what the person approved: nothing outside the skill runs or changes.
"""

from __future__ import annotations

import functools
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from bot.config import SkillsSettings
from bot.script_runner import script_sandbox_problem
from tests.bot.harness import Harness, start_harness
from tests.conftest import FakeClock
from tests.fakes.ollama import FakeOllama
from tests.skills.helpers import write_skill


def _marking(marker: Path) -> str:
    """A helper module that leaves `marker` behind when it runs."""
    return f"def main():\n    open({str(marker)!r}, 'w').write('ran')\n    print('edited')\n"


@functools.cache
def _sandbox_problem() -> str | None:
    return script_sandbox_problem(SkillsSettings(scripts="sandboxed"))


def _need_bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap); CI installs it")
    problem = _sandbox_problem()
    if problem is not None:
        pytest.skip(f"bubblewrap cannot run here: {problem}")


async def _start(
    tmp_path: Path, fake: FakeOllama, clock: FakeClock, mode: str, **skills: Any
) -> Harness:
    if mode == "sandboxed":
        _need_bwrap()
    return await start_harness(tmp_path, fake, clock, skills={"scripts": mode, **skills})


def _skill(h: Harness, files: dict[str, str], name: str = "hello") -> Path:
    folder = write_skill(h.bot.settings.skills.home_root, name, body="Run its script.")
    (folder / "scripts").mkdir(exist_ok=True)
    for relative, text in files.items():
        (folder / relative).write_text(text)
    return folder


def _host_folder(tmp_path: Path, files: dict[str, str]) -> dict[Path, tuple[bytes, int]]:
    """A folder of the host's own files, each with its content and mode as they were."""
    folder = tmp_path / "host-files"
    folder.mkdir()
    before = {}
    for name, text in files.items():
        path = folder / name
        path.write_text(text)
        path.chmod(0o640)
        before[path] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return before


def _unchanged(before: dict[Path, tuple[bytes, int]]) -> bool:
    return all((p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) == was for p, was in before.items())


def _told(h: Harness) -> str:
    """What the model was told last: the tool result of the resumed or refused call."""
    message = h.ollama.chat_requests[-1]["messages"][-1]
    assert message["role"] == "tool"
    content: str = message["content"]
    return content


def _system(h: Harness) -> str:
    return "\n".join(m["content"] for m in h.last_prompt() if m["role"] == "system")


# --- 2. no link in a skill is followed, when it is read or when a run is staged -------------


@pytest.mark.parametrize("mode", ["host", "sandboxed"])
async def test_a_skill_whose_scripts_folder_links_to_the_host_runs_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, mode: str
) -> None:
    marker = tmp_path / "outside-code-ran"
    before = _host_folder(tmp_path, {"hello.py": _marking(marker) + "main()\n"})
    h = await _start(tmp_path, fake_ollama, clock, mode)
    try:
        folder = write_skill(h.bot.settings.skills.home_root, "hello", body="Run its script.")
        (folder / "scripts").symlink_to(tmp_path / "host-files")
        _skill(h, {"scripts/other.py": "print('other')\n"}, name="other")
        await h.say("/other")  # a skill with a real script, so the tool is offered
        await h.say("/hello")
        h.ollama.tool_call("run_skill_script", {"skill": "hello", "script": "scripts/hello.py"})
        h.ollama.reply("I cannot run it.")
        await h.say("run the hello script")
        assert h.adapter.cards == []
        told = _told(h)
        assert told.startswith("error: scripts is a symlink, and lorebot follows no link")
        assert "make it a real file or folder" in told
        assert not marker.exists()
        assert _unchanged(before)
        # and the model was told before it asked
        notice = "Not usable (symlinks, and lorebot follows no link in a skill): scripts/"
        assert notice in _system(h)
    finally:
        await h.bot.stop()
