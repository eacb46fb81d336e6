"""Skill scripts under attack, through the running core: a skill whose folders are links to
the host, files edited after the card, and scripts that start processes without end.

Each test has the model ask for a run and a person answer the card, as in chat; what must
hold is what the person approved: nothing outside the skill runs or changes, nothing but
the hashed files runs, and every mode limits processes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.base import APPROVE
from bot.actions import sandbox as script_runner
from bot.actions.process import ScriptResult
from bot.actions.sandbox import (
    Limits,
    ScriptError,
    run_script,
    script_sandbox_problem,
)
from bot.config.sections import SkillsSettings
from bot.tools import scripts as script_tool
from skills.snapshot import SkillSnapshot, SnapshotFile, read_snapshot
from tests.fakes.adapter import Sent
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.paths import ROOT as REPO
from tests.support.skills import write_skill

MAIN = "import helper\nhelper.main()\n"
REVIEWED_HELPER = "def main():\n    print('the reviewed helper')\n"


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


@pytest.fixture
async def host(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> AsyncIterator[Harness]:
    h = await _start(tmp_path, fake_ollama, clock, "host")
    try:
        yield h
    finally:
        await h.bot.stop()


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


async def _ask(h: Harness, script: str = "scripts/hello.py", skill: str = "hello") -> None:
    await h.say(f"/{skill}")
    h.ollama.tool_call("run_skill_script", {"skill": skill, "script": script})
    await h.say("run the script")


async def _card(h: Harness) -> Sent:
    await _ask(h)
    return h.adapter.cards[-1]


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


@pytest.mark.parametrize("mode", ["host", "sandboxed"])
async def test_a_scripts_folder_swapped_for_a_link_after_the_card_changes_no_host_file(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, mode: str
) -> None:
    marker = tmp_path / "outside-code-ran"
    # The host folder holds the reviewed script byte for byte, beside a helper of its own.
    before = _host_folder(tmp_path, {"hello.py": MAIN, "helper.py": _marking(marker)})
    h = await _start(tmp_path, fake_ollama, clock, mode)
    try:
        folder = _skill(h, {"scripts/hello.py": MAIN, "scripts/helper.py": REVIEWED_HELPER})
        card = await _card(h)
        (folder / "scripts").rename(folder / "reviewed-scripts")
        (folder / "scripts").symlink_to(tmp_path / "host-files")

        h.ollama.reply("It was not run.")
        await h.react(card, APPROVE)
        assert not marker.exists()
        assert _unchanged(before)
        told = _told(h)
        assert told.startswith("error: the script was not run: scripts is a symlink")
        assert card.current.startswith("⚠️ Not run: `scripts/hello.py` on `skill hello`")
        assert "scripts is a symlink, and lorebot follows no link in a skill" in card.current
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "declined"
    finally:
        await h.bot.stop()


async def test_a_link_inside_the_skill_is_not_copied_into_a_run(
    host: Harness, tmp_path: Path
) -> None:
    before = _host_folder(tmp_path, {"notes.txt": "the host's notes\n"})
    code = "import os\nprint(sorted(os.listdir(os.environ['SKILL_DIR'])))\n"
    folder = _skill(host, {"scripts/hello.py": code})
    (folder / "notes.txt").symlink_to(tmp_path / "host-files" / "notes.txt")
    card = await _card(host)
    assert "Not copied into the run (symlinks or special files): `notes.txt`" in card.text

    host.ollama.reply("Listed.")
    await host.react(card, APPROVE)
    assert _told(host).strip() == "['SKILL.md', 'scripts']"
    assert _unchanged(before)


async def test_staging_refuses_a_path_out_of_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # runs are staged in here
    escape = SnapshotFile("../../escaped.txt", b"written outside", False)
    script = SnapshotFile("scripts/hello.py", b"print('hi')\n", False)
    snapshot = SkillSnapshot(("scripts",), (script, escape), (), "0" * 64)
    staged = snapshot.script("scripts/hello.py")
    assert staged is not None
    limits = Limits(5.0, 5, 256, 4096)
    with pytest.raises(ScriptError, match="unsafe path"):
        await run_script(snapshot, staged, [], mode="host", limits=limits, env={})
    assert not (tmp_path / "escaped.txt").exists()


# --- 3. what runs is exactly the set of files the card hashed --------------------------------


async def test_a_helper_edited_after_the_card_is_not_run(host: Harness, tmp_path: Path) -> None:
    marker = tmp_path / "edited-helper-ran"
    folder = _skill(host, {"scripts/hello.py": MAIN, "scripts/helper.py": REVIEWED_HELPER})
    card = await _card(host)
    (folder / "scripts" / "helper.py").write_text(_marking(marker))

    host.ollama.reply("The skill changed; I will ask again.")
    await host.react(card, APPROVE)
    assert not marker.exists()
    told = _told(host)
    assert told.startswith("error: the script was not run: the skill's files changed after")
    assert "call run_skill_script again" in told
    assert card.current.startswith("⚠️ Not run: `scripts/hello.py` on `skill hello`")
    assert card.current.splitlines()[0].endswith(
        ": the skill's files changed after the card was shown."
    )
    [action] = await host.bot.actions.fetch_recent()
    assert action.outcome == "declined"


@pytest.mark.parametrize("mode", ["host", "sandboxed"])
async def test_an_unchanged_skill_runs_the_files_its_card_hashed(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, mode: str
) -> None:
    h = await _start(tmp_path, fake_ollama, clock, mode)
    try:
        folder = _skill(h, {"scripts/hello.py": MAIN, "scripts/helper.py": REVIEWED_HELPER})
        card = await _card(h)
        snapshot = read_snapshot(folder)
        size = sum(len((folder / p).read_bytes()) for p in ("SKILL.md", *_scripts()))
        assert f"Skill files: 3 files, {size} bytes, sha256 `{snapshot.sha256}`" in card.text
        assert f"sha256 `{hashlib.sha256(MAIN.encode()).hexdigest()}`" in card.text

        h.ollama.reply("It ran.")
        await h.react(card, APPROVE)
        assert _told(h).strip() == "the reviewed helper"
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "ok"
    finally:
        await h.bot.stop()


def _scripts() -> tuple[str, ...]:
    return ("scripts/hello.py", "scripts/helper.py")


async def test_what_runs_is_the_read_that_was_checked(
    host: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "edited-helper-ran"
    folder = _skill(host, {"scripts/hello.py": MAIN, "scripts/helper.py": REVIEWED_HELPER})
    card = await _card(host)
    real: Callable[..., SkillSnapshot] = read_snapshot

    def read_then_edit(path: Path) -> SkillSnapshot:
        """The check at ✅ reads the folder; someone edits the helper right after."""
        snapshot = real(path)
        (folder / "scripts" / "helper.py").write_text(_marking(marker))
        return snapshot

    monkeypatch.setattr(script_tool, "read_snapshot", read_then_edit)
    host.ollama.reply("It ran.")
    await host.react(card, APPROVE)
    assert _told(host).strip() == "the reviewed helper"
    assert not marker.exists()


async def test_a_card_saved_before_the_files_were_bound_is_refused(
    host: Harness, tmp_path: Path
) -> None:
    marker = tmp_path / "old-card-ran"
    _skill(host, {"scripts/hello.py": _marking(marker) + "main()\n"})
    card = await _card(host)
    [proposal] = await host.bot.proposals.fetch_recent("pending")
    payload = {
        k: v for k, v in proposal.payload.items() if k not in ("files_sha256", "files")
    }  # what lorebot saved before it bound the skill's other files
    arguments = payload["arguments"]
    old = [arguments["skill"], arguments["script"], payload["sha256"], arguments["args"], "host"]
    payload["hash"] = hashlib.sha256(json.dumps(old, separators=(",", ":")).encode()).hexdigest()
    async with host.bot.db.write() as conn:
        await conn.execute(
            "UPDATE proposals SET payload_json = ? WHERE id = ?", (json.dumps(payload), proposal.id)
        )

    host.ollama.reply("It was not run; I will ask again.")
    await host.react(card, APPROVE)
    assert not marker.exists()
    told = _told(host)
    assert told.startswith("error: the script was not run: its card was made by an earlier")
    assert "call run_skill_script again" in told
    assert card.current.startswith("⚠️ Not run") and "earlier lorebot" in card.current


# --- 14. every mode limits processes ----------------------------------------------------------


FORK_BOMB = """import os, sys, time
children, failed = [], "none"
for _ in range({cap}):
    try:
        pid = os.fork()
    except OSError as exc:
        failed = type(exc).__name__
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print(len(children), failed)
"""
BOMB_CAP = 200  # never a real fork bomb: without a limit it stops here


@pytest.mark.parametrize("mode", ["host", "sandboxed"])
async def test_every_mode_puts_a_process_limit_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    if mode == "sandboxed":
        _need_bwrap()
    seen: list[list[str]] = []

    async def capture(argv: list[str], *_: Any, **__: Any) -> ScriptResult:
        seen.append(argv)
        return ScriptResult(0, "", "", 0, 0)

    monkeypatch.setattr(script_runner, "execute", capture)
    folder = tmp_path / "skill"
    (folder / "scripts").mkdir(parents=True)
    (folder / "scripts" / "hello.py").write_text("print('hi')\n")
    snapshot = read_snapshot(folder)
    script = snapshot.script("scripts/hello.py")
    assert script is not None
    await run_script(snapshot, script, [], mode=mode, limits=Limits(5.0, 5, 256, 4096), env={})
    [argv] = seen
    limits = argv[: argv.index("--")]
    [nproc] = [option for option in limits if option.startswith("--nproc=")]
    runs_as = 65534 if mode == "sandboxed" and script_runner.dropping_privileges() else os.getuid()
    # PROCESSES more than that uid runs (give or take what started or ended meanwhile)
    assert abs(int(nproc.removeprefix("--nproc=")) - script_runner.process_limit(runs_as)) < 32


async def test_a_host_script_gets_a_process_limit_relative_to_its_user(host: Harness) -> None:
    code = "import resource\nprint(*resource.getrlimit(resource.RLIMIT_NPROC))\n"
    _skill(host, {"scripts/hello.py": code})
    card = await _card(host)
    host.ollama.reply("Read.")
    await host.react(card, APPROVE)
    soft, hard = map(int, _told(host).split())
    assert soft == hard != resource.RLIM_INFINITY
    ceiling = script_runner.process_limit(os.getuid()) + 32  # what started meanwhile
    assert script_runner.PROCESSES <= soft <= ceiling


async def test_a_sandboxed_fork_bomb_is_stopped_by_the_process_limit(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(script_runner, "PROCESSES", 16)
    h = await _start(tmp_path, fake_ollama, clock, "sandboxed", script_timeout_s=30.0)
    try:
        _skill(h, {"scripts/hello.py": FORK_BOMB.format(cap=BOMB_CAP)})
        card = await _card(h)
        h.ollama.reply("It was stopped.")
        await h.react(card, APPROVE)
        started, failed = _told(h).split()
        assert int(started) < BOMB_CAP // 2 and failed == "BlockingIOError"
    finally:
        await h.bot.stop()


RUN_AS_USER = """
import asyncio, sys, tempfile
from pathlib import Path
from bot.actions import sandbox as script_runner
from bot.actions.sandbox import Limits, run_script
from skills.snapshot import read_snapshot

script_runner.PROCESSES = 16
with tempfile.TemporaryDirectory() as tmp:
    (Path(tmp) / "scripts").mkdir()
    (Path(tmp) / "scripts" / "bomb.py").write_text(sys.argv[1])
    snapshot = read_snapshot(Path(tmp))
    script = snapshot.script("scripts/bomb.py")
    limits = Limits(30.0, 10, 512, 65536)
    result = asyncio.run(run_script(snapshot, script, [], mode="host", limits=limits, env={}))
    print(result.stdout.strip(), result.stderr.strip())
"""


def test_a_host_fork_bomb_of_an_ordinary_user_is_stopped() -> None:
    """The runner as an ordinary user (uid 65534 when the tests run as root), unsandboxed:
    the limit counts every process of the user, so it is set relative to what runs."""
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to run as an ordinary user")
    command = [*(drop if os.geteuid() == 0 else []), sys.executable, "-c", RUN_AS_USER]
    done = subprocess.run(
        [*command, FORK_BOMB.format(cap=BOMB_CAP)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"},
    )
    assert done.returncode == 0, done.stderr
    started, failed = done.stdout.split()
    assert int(started) < BOMB_CAP // 2 and failed == "BlockingIOError", done.stdout
