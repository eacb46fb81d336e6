"""Running one skill script: under bubblewrap or on the host, always with limits.

Both modes run a private copy of the skill folder written from the approved snapshot (the
bytes the card's hashes cover, held in memory; the live folder is not read again), so
what runs is exactly what the card showed; the work folder is fresh and deleted
afterwards. Limits come from `prlimit` (CPU seconds, address space, file size, open files,
processes) and a wall-clock timeout that kills the whole process group. `sandboxed` adds
bubblewrap: no network, nothing of the host but /usr (and /etc/alternatives, /etc/ssl),
the copy read-only and the work folder writable, no capabilities, and as root an
unprivileged uid (a user namespace alone still lets root's files be read).
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.actions.process import ProcessStartError, ScriptResult, execute
from bot.config.sections import SkillsSettings
from bot.config.settings import Settings
from bot.errors import UserError
from skills.resources import ScriptFile
from skills.snapshot import SkillSnapshot

_log = logging.getLogger(__name__)

BWRAP = "bwrap"
SETPRIV = "setpriv"
PRLIMIT = "prlimit"
PYTHON = "/usr/bin/python3"
SHELL = "/bin/sh"
NOBODY = 65534
PATH = "/usr/local/bin:/usr/bin:/bin"
# Where the sandbox sees the skill's copy and the work folder.
SANDBOX_SKILL = "/skill"
SANDBOX_WORK = "/work"
FILE_SIZE_BYTES = 64 * 1024 * 1024
OPEN_FILES = 256
# How many processes (threads count) a script may add to those its uid already runs: the
# kernel counts RLIMIT_NPROC over every process of the real uid, and ignores it for root.
PROCESSES = 256
TMPFS_BYTES = 64 * 1024 * 1024
TRIAL_TIMEOUT_S = 10.0
FIX = 'or set skills.scripts = "host" to run scripts unsandboxed as lorebot\'s own user'


class ScriptError(UserError):
    """A script cannot be run; the message says why, for the model and the person."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one run may use."""

    timeout_s: float
    cpu_s: int
    memory_mb: int
    output_bytes: int

    @classmethod
    def of(cls, settings: SkillsSettings) -> Limits:
        return cls(
            settings.script_timeout_s,
            settings.script_cpu_s,
            settings.script_memory_mb,
            settings.script_output_bytes,
        )


def dropping_privileges() -> bool:
    """Whether the sandbox runs as an unprivileged uid: when lorebot runs as root."""
    return os.geteuid() == 0


def script_sandbox_problem(settings: Settings | SkillsSettings) -> str | None:
    """Why sandboxed scripts cannot run here and how to fix it, in one line; None when
    they can, or when scripts are not `sandboxed`."""
    skills = settings.skills if isinstance(settings, Settings) else settings
    if skills.scripts != "sandboxed":
        return None
    if shutil.which(BWRAP) is None:
        return (
            f"skills.scripts is sandboxed but bubblewrap ({BWRAP}) is not installed: "
            f"install it (apt-get install bubblewrap), {FIX}"
        )
    for tool in (PRLIMIT, SETPRIV) if dropping_privileges() else (PRLIMIT,):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: install util-linux, {FIX}"
    command = [*_privilege_drop(), *_bwrap_base(), "--", "/usr/bin/true"]
    try:
        trial = subprocess.run(command, capture_output=True, timeout=TRIAL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be tried ({exc}); {FIX}"
    if trial.returncode != 0:
        said = trial.stderr.decode(errors="replace").strip().splitlines()
        why = said[-1] if said else f"exit status {trial.returncode}"
        return (
            f"bubblewrap cannot start a sandbox here ({why}): allow unprivileged user "
            f"namespaces (kernel.unprivileged_userns_clone=1; in a container, a seccomp "
            f"profile that permits them), {FIX}"
        )
    return None


def process_limit_gap(mode: str) -> str | None:
    """Why scripts run without a process limit here, in one line, or None when it holds:
    the kernel never applies one to root, so not to host-mode scripts of a root lorebot."""
    if mode != "host" or os.getuid() != 0:
        return None
    return (
        "skills.scripts is host and lorebot runs as root, whose processes the kernel never "
        "limits: only the timeout bounds how many processes a script starts"
    )


async def run_script(
    snapshot: SkillSnapshot,
    script: ScriptFile,
    args: Sequence[str],
    *,
    mode: str,
    limits: Limits,
    env: Mapping[str, str],
) -> ScriptResult:
    """Run `script` of the skill read into `snapshot` once with `args`; ScriptError when it
    cannot start. `env` is the whole environment it gets besides PATH, HOME, LANG and
    SKILL_DIR."""
    staged = snapshot.script(script.relative)
    if staged is None or staged.data != script.data or staged.executable != script.executable:
        raise ScriptError(f"{script.relative} is not the one in the skill's files as read")
    sandboxed = mode == "sandboxed"
    unprivileged = sandboxed and dropping_privileges()
    with tempfile.TemporaryDirectory(prefix="lorebot-script-", ignore_cleanup_errors=True) as tmp:
        stage = Path(tmp)
        try:
            await asyncio.to_thread(_stage, stage, snapshot, unprivileged)
        except OSError as exc:
            raise ScriptError(f"the skill folder could not be copied: {exc}") from None
        runs_as = NOBODY if unprivileged else os.getuid()
        processes = await asyncio.to_thread(process_limit, runs_as)
        copy, work = stage / "skill", stage / "work"
        skill_dir, work_dir = (SANDBOX_SKILL, SANDBOX_WORK) if sandboxed else (str(copy), str(work))
        command = _interpreter(script, f"{skill_dir}/{script.relative}") + list(args)
        variables = {"PATH": PATH, "HOME": work_dir, "LANG": "C.UTF-8", "SKILL_DIR": skill_dir}
        variables.update(env)
        if sandboxed:
            binds = ["--ro-bind", str(copy), SANDBOX_SKILL, "--bind", str(work), SANDBOX_WORK]
            sandbox = [*_bwrap_base(), *binds, "--chdir", SANDBOX_WORK, "--"]
            command = [*_privilege_drop(), *sandbox, *command]
        argv = [*_limits(limits, processes), *command]
        try:
            return await execute(
                argv, variables, work, timeout_s=limits.timeout_s, output_bytes=limits.output_bytes
            )
        except ProcessStartError as exc:
            raise ScriptError(str(exc)) from None


def process_limit(uid: int) -> int:
    """The RLIMIT_NPROC a script running as `uid` gets: PROCESSES more than that uid runs
    now (the kernel counts all of them), within lorebot's own hard limit, which only root
    may raise."""
    limit = _tasks_of(uid) + PROCESSES
    if os.geteuid() != 0:
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
    return limit


def _tasks_of(uid: int) -> int:
    """How many tasks (processes and their threads) `uid` runs, as /proc shows them."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
            )
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):
            continue  # the process ended while we looked, or hides its status
    return count


def _limits(limits: Limits, processes: int) -> list[str]:
    memory = limits.memory_mb * 1024 * 1024
    found = shutil.which(PRLIMIT)
    if found is None:
        raise ScriptError("prlimit (util-linux) is not installed, so scripts cannot be limited")
    options = [
        f"--cpu={limits.cpu_s}",
        f"--as={memory}",
        f"--fsize={FILE_SIZE_BYTES}",
        f"--nofile={OPEN_FILES}",
        f"--nproc={processes}",
    ]
    return [found, *options, "--"]


def _privilege_drop() -> list[str]:
    if not dropping_privileges():
        return []
    ids = [f"--reuid={NOBODY}", f"--regid={NOBODY}"]
    return [shutil.which(SETPRIV) or SETPRIV, *ids, "--clear-groups", "--inh-caps=-all"]


def _bwrap_base() -> list[str]:
    """Everything of a sandbox but the skill and work folders. Its environment is exactly
    the one the process is started with (not `--clearenv` plus `--setenv`, which would put
    secret values on a command line other users can read)."""
    return [
        shutil.which(BWRAP) or BWRAP,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--ro-bind-try",
        "/etc/alternatives",
        "/etc/alternatives",
        "--ro-bind-try",
        "/etc/ssl",
        "/etc/ssl",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/tmp",
    ]


def _interpreter(script: ScriptFile, path: str) -> list[str]:
    """How to run the script: by its extension, else directly when executable, else by its
    `#!` line."""
    suffix = Path(script.relative).suffix.lower()
    if suffix == ".py":
        return [PYTHON, "-B", path]
    if suffix == ".sh":
        return [SHELL, path]
    if script.executable:
        return [path]
    first = script.data.split(b"\n", 1)[0]
    if first.startswith(b"#!"):
        parts = first[2:].decode(errors="replace").strip().split(None, 1)
        if parts:
            return [*parts, path]
    raise ScriptError(
        f"{script.relative} is not .py or .sh, not executable and has no #! line, "
        "so lorebot does not know how to run it"
    )


def _stage(stage: Path, snapshot: SkillSnapshot, unprivileged: bool) -> None:
    """A read-only copy of the skill written from `snapshot` alone, and an empty work
    folder; readable (the copy) and writable (the work folder) by the sandbox's uid. Every
    folder and file is created new, so nothing is written through a link."""
    copy, work = stage / "skill", stage / "work"
    copy.mkdir(mode=0o700)
    for relative in snapshot.folders:
        (copy / _inside(relative)).mkdir(mode=0o700)
    for file in snapshot.files:
        _write_new(copy / _inside(file.relative), file.data, file.mode)
    for relative in reversed(snapshot.folders):
        (copy / relative).chmod(0o555)
    copy.chmod(0o555)
    work.mkdir(mode=0o700)
    if unprivileged:
        stage.chmod(0o711)
        os.chown(work, NOBODY, NOBODY)


def _inside(relative: str) -> str:
    """`relative` when it names a path below the copy, else ScriptError."""
    parts = relative.split("/")
    if relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ScriptError(f"the skill's files hold an unsafe path {relative!r}")
    return relative


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create `path` (never an existing file or a link) holding `data`, then set `mode`."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o600), "wb") as file:
        file.write(data)
        os.fchmod(file.fileno(), mode)
