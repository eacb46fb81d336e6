"""Skill scripts through the running core: a person starts a skill with `/name`, the model
asks to run one of its scripts, and nothing runs until a person clicks ✅ on a card that
shows exactly which bytes will run; sandboxed runs cannot reach the host."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import shutil
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.base import ALWAYS, APPROVE, REJECT
from bot.actions import sandbox as script_runner
from bot.actions.sandbox import script_sandbox_problem
from bot.cli.main import main
from bot.config.sections import SkillsSettings
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.scripts import (
    HELLO,
    _ask_to_run,
    _run,
    _skill,
    _start,
    _told,
    _tools_offered,
)

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ENV_SECRET = "s3cr3t-value-of-the-skill-env"


@functools.cache
def _sandbox_problem() -> str | None:
    return script_sandbox_problem(SkillsSettings(scripts="sandboxed"))


@pytest.fixture
def bwrap() -> None:
    """Skips a test that needs a working bubblewrap (CI installs it)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap); CI installs it")
    problem = _sandbox_problem()
    if problem is not None:
        pytest.skip(f"bubblewrap cannot run here: {problem}")


@pytest.fixture
async def host(tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock) -> AsyncIterator[Harness]:
    h = await _start(tmp_path, fake_ollama, clock, "host")
    try:
        yield h
    finally:
        await h.bot.stop()


@pytest.mark.parametrize("mode", ["host", "sandboxed"])
async def test_an_approved_script_runs_and_the_model_gets_its_output(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, mode: str, request: Any
) -> None:
    if mode == "sandboxed":
        request.getfixturevalue("bwrap")
    h = await _start(tmp_path, fake_ollama, clock, mode)
    try:
        _skill(h)
        card = await _ask_to_run(h, ["world", "--loud"])
        assert h.adapter.replies[-1] == "🧩 The skill `hello` is active here now."
        sha = hashlib.sha256(HELLO.encode()).hexdigest()
        assert "`scripts/hello.py` of the skill `hello`" in card.text
        assert f"sha256 `{sha}`" in card.text
        assert '\nprint("hello from the script", *sys.argv[1:])\n' in card.text
        assert '[\n  "world",\n  "--loud"\n]' in card.text
        assert ("NOT sandboxed" in card.text) == (mode == "host")
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "pending" and action.tool == "skill:hello/scripts/hello.py"

        h.ollama.reply("The script said hello.")
        await h.react(card, APPROVE)
        assert _told(h).strip() == "hello from the script world --loud"
        assert h.adapter.replies[-1] == "The script said hello."
        assert card.current.startswith("✅ Ran `scripts/hello.py` on `skill hello` (proposal #")
        assert ": done in " in card.current
        [action] = await h.bot.actions.fetch_recent()
        assert (action.outcome, action.approval, action.decided_by) == (
            "ok",
            "card",
            "user:test/UALICE",
        )
        assert "hello from the script" in action.output
    finally:
        await h.bot.stop()


async def test_a_declined_script_never_runs(host: Harness, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    _skill(host, f"open({str(ran)!r}, 'w').write('ran')\n")
    card = await _ask_to_run(host)
    host.ollama.reply("OK, I left it.")
    await host.react(card, REJECT)
    assert not ran.exists()
    assert "declined" in _told(host) and card.current.startswith("❌ Declined")
    [action] = await host.bot.actions.fetch_recent()
    assert action.outcome == "declined"


async def test_a_script_edited_after_its_card_is_not_run(host: Harness, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    folder = _skill(host, "print('the reviewed version')\n")
    card = await _ask_to_run(host)
    (folder / "scripts" / "hello.py").write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    host.ollama.reply("It changed; I will ask again.")
    await host.react(card, APPROVE)
    assert not ran.exists()
    told = _told(host)
    assert told.startswith("error: the script was not run") and "changed after the card" in told
    assert "call run_skill_script again" in told
    assert card.current.startswith("⚠️ Not run: `scripts/hello.py` on `skill hello`")
    assert card.current.splitlines()[0].endswith(
        ": scripts/hello.py changed after the card was shown."
    )
    [action] = await host.bot.actions.fetch_recent()
    assert action.outcome == "declined"


async def test_the_mode_of_the_turn_holds_after_a_restart(
    host: Harness, tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    ran = tmp_path / "ran"
    _skill(host, f"open({str(ran)!r}, 'w').write('ran')\n")
    card = await _ask_to_run(host)
    await host.bot.stop()
    h = await start_harness(tmp_path, fake_ollama, clock, host.adapter, skills={})
    try:
        h.ollama.reply("Scripts are off now.")
        await h.react(card, APPROVE)
        assert not ran.exists()
        assert "skills.scripts changed from host to disabled" in _told(h)
        assert card.current.startswith("⚠️ Not run")
    finally:
        await h.bot.stop()


async def test_disabled_scripts_are_listed_but_never_offered(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        _skill(h)
        fake_ollama.reply("It has a script.")
        await h.say("/hello what can it do?")
        assert "run_skill_script" not in _tools_offered(h)
        active = "\n".join(m["content"] for m in h.last_prompt() if m["role"] == "system")
        assert "scripts/hello.py" in active and 'skills.scripts = "sandboxed" or "host"' in active

        h.ollama.tool_call("run_skill_script", {"skill": "hello", "script": "scripts/hello.py"})
        h.ollama.reply("I cannot run it.")
        await h.say("run it anyway")
        assert h.adapter.cards == []
        assert "there is no tool named 'run_skill_script'" in _told_any(h)
        assert await h.bot.actions.fetch_recent() == []
    finally:
        await h.bot.stop()


def _told_any(h: Harness) -> str:
    content: str = h.ollama.chat_requests[-1]["messages"][-1]["content"]
    return content


async def test_the_tool_is_offered_only_for_an_active_skill_with_scripts(host: Harness) -> None:
    folder = _skill(host)
    host.ollama.reply("hi")
    await host.say("hello")
    assert "run_skill_script" not in _tools_offered(host)  # the skill is not active here

    host.ollama.reply("It can say hello.")
    await host.say("/hello what can you do?")
    assert "run_skill_script" in _tools_offered(host)
    active = "\n".join(m["content"] for m in host.last_prompt() if m["role"] == "system")
    assert "run one with run_skill_script" in active

    shutil.rmtree(folder / "scripts")  # SKILL.md is unchanged, so the skill stays active
    host.ollama.reply("No scripts now.")
    await host.say("and now?")
    assert "run_skill_script" not in _tools_offered(host)


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("../SKILL.md", "`..`"),
        ("/etc/passwd", "relative"),
        ("scripts/escape.py", "outside the skill's scripts/ folder"),
        ("scripts/missing.py", "does not exist"),
    ],
)
async def test_only_a_script_inside_scripts_can_be_asked_for(
    host: Harness, tmp_path: Path, script: str, reason: str
) -> None:
    folder = _skill(host)
    (tmp_path / "outside.py").write_text("print('outside')\n")
    (folder / "scripts" / "escape.py").symlink_to(tmp_path / "outside.py")
    await host.say("/hello")
    host.ollama.tool_call("run_skill_script", {"skill": "hello", "script": script})
    host.ollama.reply("I cannot run that.")
    await host.say("run it")
    assert host.adapter.cards == []
    assert reason in _told(host)


async def test_a_secret_in_a_scripts_output_is_redacted(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("HELLO_API_KEY", ENV_SECRET)
    env = {"API_KEY": "${HELLO_API_KEY}", "GREETING": "hello-from-the-config"}
    h = await _start(tmp_path, fake_ollama, clock, "host", script_env=env)
    code = f"import os\nprint({TOKEN!r})\nprint(os.environ['API_KEY'], os.environ['GREETING'])\n"
    try:
        told = await _run(h, code=code)
        assert TOKEN not in told and ENV_SECRET not in told
        assert "[REDACTED]" in told and "hello-from-the-config" in told
        [action] = await h.bot.actions.fetch_recent()
        assert TOKEN not in action.output and ENV_SECRET not in action.output
        assert all(TOKEN not in r.getMessage() for r in caplog.records)
        assert all(ENV_SECRET not in r.getMessage() for r in caplog.records)
    finally:
        await h.bot.stop()


async def test_a_secret_in_the_arguments_is_redacted_on_the_card(host: Harness) -> None:
    _skill(host)
    card = await _ask_to_run(host, ["--token", TOKEN])
    assert TOKEN not in card.text and "[REDACTED]" in card.text


async def test_a_script_only_gets_the_environment_it_is_given(host: Harness) -> None:
    told = await _run(host, code="import os\nprint(sorted(os.environ))\n")
    assert told.strip() == "['HOME', 'LANG', 'PATH', 'SKILL_DIR']"


async def test_a_failing_script_is_an_error_with_its_exit_status(host: Harness) -> None:
    told = await _run(host, code="import sys\nprint('bad input', file=sys.stderr)\nsys.exit(3)\n")
    assert told.startswith("error: the script failed (exit status 3)")
    assert "stderr:\nbad input" in told
    [action] = await host.bot.actions.fetch_recent()
    assert action.outcome == "error"
    card = host.adapter.cards[-1]
    assert card.current.startswith("⚠️ Ran `scripts/hello.py` on `skill hello`")


async def test_huge_output_is_capped(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await _start(tmp_path, fake_ollama, clock, "host", script_output_bytes=2048)
    try:
        told = await _run(h, code="import sys\nsys.stdout.write('x' * 5_000_000)\n")
        assert told.count("x") == 2048
        assert "[… 4997952 more bytes of output cut]" in told
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "ok"
    finally:
        await h.bot.stop()


RUNAWAY = """import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{marker}"])
print("started", flush=True)
while True:
    time.sleep(1)
"""


def _running(marker: str) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                return True
        except OSError:
            continue  # the process ended while we looked
    return False


async def _gone(marker: str) -> bool:
    """Whether every process with `marker` on its command line ends within five seconds (a
    killed process is gone a moment after the kill)."""
    for _ in range(250):
        if not _running(marker):
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.mark.parametrize("mode", ["host", "sandboxed"])
async def test_a_runaway_script_and_its_children_are_killed_at_the_timeout(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, mode: str, request: Any
) -> None:
    if mode == "sandboxed":
        request.getfixturevalue("bwrap")
    marker = f"lorebot-runaway-{uuid.uuid4().hex}"
    h = await _start(tmp_path, fake_ollama, clock, mode, script_timeout_s=1.0)
    try:
        told = await _run(h, code=RUNAWAY.format(marker=marker))
        assert told.startswith("error: the script failed (timed out after 1 s")
        assert "every process it started were killed" in told and "started" in told
        assert await _gone(marker)
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "error"
        assert action.duration_ms is not None and action.duration_ms < 5000
    finally:
        _kill_marked(marker)  # only if the test failed: never leave a runaway behind
        await h.bot.stop()


ESCAPING = """import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{marker}"],
                 start_new_session=True)
print("left a process behind")
"""


def _kill_marked(marker: str) -> None:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                os.kill(int(cmdline.parent.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue


async def test_a_host_script_that_escapes_its_process_group_cannot_hang_lorebot(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    marker = f"lorebot-escaped-{uuid.uuid4().hex}"
    h = await _start(tmp_path, fake_ollama, clock, "host", script_timeout_s=0.5)
    try:
        told = await _run(h, code=ESCAPING.format(marker=marker))
        assert told.startswith("error: the script failed (timed out after 0.5 s")
        assert "still running on the host" in told and "left a process behind" in told
        [action] = await h.bot.actions.fetch_recent()
        assert action.outcome == "error"
    finally:
        _kill_marked(marker)
        await h.bot.stop()


CONFINED = """import os, socket, sys
port, database, outside = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def attempt(label, action):
    try:
        action()
        print(label, "ALLOWED")
    except OSError as exc:
        print(label, "blocked", type(exc).__name__)
attempt("network", lambda: socket.create_connection(("127.0.0.1", port), timeout=2))
attempt("root", lambda: os.listdir("/root"))
attempt("database", lambda: open(database, "rb").read())
attempt("skill", lambda: open(os.environ["SKILL_DIR"] + "/new.txt", "w").write("x"))
attempt("usr", lambda: open("/usr/new.txt", "w").write("x"))
attempt("outside", lambda: open(outside, "w").write("x"))
attempt("work", lambda: open("here.txt", "w").write("x"))
print("uid", os.getuid())
"""


async def test_the_sandbox_cannot_reach_the_host(
    bwrap: None, tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await _start(tmp_path, fake_ollama, clock, "sandboxed")
    port = fake_ollama.url.rsplit(":", 1)[1].strip("/")
    outside = tmp_path / "outside.txt"
    try:
        told = await _run(h, [port, str(h.bot.settings.database.path), str(outside)], CONFINED)
        for label in ("network", "root", "database", "skill", "usr", "outside"):
            assert f"{label} blocked" in told, told
        assert "work ALLOWED" in told
        assert not outside.exists()
        assert not (h.bot.settings.skills.home_root / "hello" / "new.txt").exists()
        if script_runner.dropping_privileges():
            assert "uid 65534" in told
    finally:
        await h.bot.stop()


async def test_the_sandbox_limits_memory(
    bwrap: None, tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await _start(tmp_path, fake_ollama, clock, "sandboxed", script_memory_mb=128)
    try:
        told = await _run(h, code="block = bytearray(512 * 1024 * 1024)\nprint('allocated')\n")
        assert told.startswith("error: the script failed (exit status 1)")
        assert "MemoryError" in told and "allocated" not in told
    finally:
        await h.bot.stop()


async def test_sandboxed_without_bubblewrap_offers_no_script_tool_and_says_why(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(script_runner, "BWRAP", str(tmp_path / "missing" / "bwrap"))
    caplog.set_level(logging.WARNING)
    h = await _start(tmp_path, fake_ollama, clock, "sandboxed")
    try:
        problem = script_sandbox_problem(h.bot.settings)
        assert problem is not None and "apt-get install bubblewrap" in problem
        assert 'skills.scripts = "host"' in problem
        warnings = [r.getMessage() for r in caplog.records if "skill scripts" in r.getMessage()]
        assert warnings == [f"skill scripts are not offered: {problem}"]

        _skill(h)
        h.ollama.reply("I cannot run scripts here.")
        await h.say("/hello run it")
        assert "run_skill_script" not in _tools_offered(h)
        active = "\n".join(m["content"] for m in h.last_prompt() if m["role"] == "system")
        assert "not run here" in active
    finally:
        await h.bot.stop()


@pytest.mark.usefixtures("bwrap")
def test_doctor_says_whether_sandboxed_scripts_can_run(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_SKILLS__SCRIPTS", "sandboxed")
    main(["doctor"])
    assert "✓ scripts: sandboxed under bubblewrap" in capsys.readouterr().out

    monkeypatch.setattr(script_runner, "BWRAP", str(env / "missing" / "bwrap"))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "✗ scripts: skills.scripts is sandboxed but bubblewrap" in out
    assert "apt-get install bubblewrap" in out


def test_no_sandbox_problem_unless_sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(script_runner, "BWRAP", "/nonexistent/bwrap")
    assert script_sandbox_problem(SkillsSettings(scripts="host")) is None
    assert script_sandbox_problem(SkillsSettings()) is None
    assert "bubblewrap" in (script_sandbox_problem(SkillsSettings(scripts="sandboxed")) or "")


async def test_an_admins_infinity_runs_once_but_never_exempts_a_script(host: Harness) -> None:
    _skill(host)
    card = await _ask_to_run(host)
    host.ollama.reply("Ran it.")
    await host.react(card, ALWAYS, user="UADMIN")
    assert _told(host).strip() == "hello from the script"

    host.ollama.tool_call("run_skill_script", {"skill": "hello", "script": "scripts/hello.py"})
    await host.say("run it again")
    assert len(host.adapter.cards) == 2  # every run asks again
    outcomes = sorted(a.outcome for a in await host.bot.actions.fetch_recent())
    assert outcomes == ["ok", "pending"]
    assert await host.bot.actions.fetch_allowances() == []  # nothing for a script to use
