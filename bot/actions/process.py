"""Running a script's process: output read in chunks and capped, a wall-clock timeout that
kills the whole process group, and an honest account of how it ended."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_log = logging.getLogger(__name__)

# After the kill, how long output may still drain before the readers are given up.
DRAIN_GRACE_S = 1.0
CHUNK = 65536


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """How a run ended and what it printed (decoded, not yet scrubbed of secrets)."""

    exit_status: int | None  # None when it was killed at the timeout
    stdout: str
    stderr: str
    dropped: int  # bytes of output beyond the cap, read and thrown away
    duration_ms: int
    # After the kill, a process that had left the group still held its output open.
    escaped: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def status_text(self) -> str:
        """`exit status 3`, or with the signal that ended it (a signal through bwrap is
        128 + N, e.g. 152 for SIGXCPU at the CPU limit)."""
        status = self.exit_status
        if status is None:
            return "killed at the timeout"
        number = -status if status < 0 else status - 128
        if status < 0 or (status > 128 and number in signal.valid_signals()):
            with contextlib.suppress(ValueError):
                return f"exit status {status} (killed by {signal.Signals(number).name})"
        return f"exit status {status}"


class _Capture:
    """One output pipe of the script: keeps the first `limit` bytes and reads the rest away,
    so a chatty script never blocks on a full pipe. lorebot owns the pipe (not asyncio's
    subprocess transport), so a process that keeps it open cannot hold up the wait."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0
        read_fd, self.write_fd = os.pipe()
        self.pipe = os.fdopen(read_fd, "rb", buffering=0)
        self.transport: asyncio.ReadTransport | None = None

    async def drain(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        self.transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self.pipe
        )
        while chunk := await reader.read(CHUNK):
            room = max(0, self.limit - len(self.kept))
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def close_write_end(self) -> None:
        os.close(self.write_fd)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.pipe.close()

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


class ProcessStartError(Exception):
    """The process could not be started; the message says why."""


async def execute(
    argv: list[str], env: dict[str, str], cwd: Path, *, timeout_s: float, output_bytes: int
) -> ScriptResult:
    """Run `argv` in a new session, keeping `output_bytes` of stdout and of stderr; at
    `timeout_s` kill its whole process group."""
    started = time.monotonic()
    out, err = _Capture(output_bytes), _Capture(output_bytes)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=out.write_fd,
            stderr=err.write_fd,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        out.close()
        err.close()
        raise ProcessStartError(f"the script could not be started: {exc.strerror or exc}") from None
    finally:
        out.close_write_end()
        err.close_write_end()
    readers = asyncio.gather(out.drain(), err.drain())
    timed_out = escaped = False
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.shield(readers)
            await process.wait()
    except TimeoutError:
        timed_out = True
        _kill_group(process.pid)
        await process.wait()
        escaped = not await _finish_reading(readers)
    finally:
        if process.returncode is None:  # cancelled: never leave it running
            _kill_group(process.pid)
        readers.cancel()
        out.close()
        err.close()
    duration_ms = int((time.monotonic() - started) * 1000)
    status = None if timed_out else process.returncode
    dropped = out.dropped + err.dropped
    return ScriptResult(status, out.text(), err.text(), dropped, duration_ms, escaped)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _finish_reading(readers: asyncio.Future[tuple[None, None]]) -> bool:
    """Read what the killed processes left in the pipes. A process that left the group
    (host mode only: a session of its own) may hold them open: False when the reading was
    given up after a grace period."""
    try:
        async with asyncio.timeout(DRAIN_GRACE_S):
            await readers
    except TimeoutError:
        _log.warning("a script's process outlived its process group and still runs")
        return False
    return True
