"""Running lorebot as a service: systemd notify and watchdog, health, locks, backups, logs."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from bot.cli.main import main
from bot.config.settings import SystemdEnvironment
from bot.daemon.logs import SecretFilter, configure_logging
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import make_settings
from tests.support.paths import ROOT as ROOT


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.setblocking(False)
    yield sock
    sock.close()


async def datagrams(sock: socket.socket, until: str, within: float = 3.0) -> list[str]:
    """Notify messages received until one contains `until`."""
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    async with asyncio.timeout(within):
        while not any(until in m for m in seen):
            seen.append((await loop.sock_recv(sock, 4096)).decode())
    return seen


async def test_ready_watchdog_and_stopping_arrive_in_order(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, notify_socket: socket.socket
) -> None:
    from bot.daemon.app import Bot

    settings = make_settings(tmp_path / "bot.db", fake_ollama.url)
    systemd = SystemdEnvironment(str(tmp_path / "notify.sock"), watchdog_usec=150_000)
    bot = Bot(settings, [RecordingAdapter()], clock=clock, systemd=systemd)
    await bot.start()
    seen = await datagrams(notify_socket, "WATCHDOG=1")
    # While the database opens (and migrates), start-up asks for more time.
    ready = next(i for i, m in enumerate(seen) if m.startswith("READY=1"))
    assert seen[0] == "EXTEND_TIMEOUT_USEC=60000000\nSTATUS=opening the database"
    assert all(m.startswith("EXTEND_TIMEOUT_USEC=") for m in seen[:ready])
    assert seen[ready].startswith("READY=1\nSTATUS=running with test")
    assert not any(m.startswith("EXTEND_TIMEOUT_USEC=") for m in seen[ready:])
    await bot.stop()
    seen = await datagrams(notify_socket, "STOPPING=1")
    assert seen[-1].startswith("STOPPING=1")


async def test_a_long_start_keeps_asking_systemd_for_time_until_it_is_done(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    """A migration of a large database may take minutes: systemd must not take the
    start for hung meanwhile, nor hear more requests once it is done."""
    from bot.daemon.notify import Notifier, start_extended

    notifier = Notifier(str(tmp_path / "notify.sock"))
    loop = asyncio.get_running_loop()
    async with start_extended(notifier, "opening the database", every_s=0.01):
        async with asyncio.timeout(3):
            asks = [(await loop.sock_recv(notify_socket, 4096)).decode() for _ in range(3)]
    assert asks == ["EXTEND_TIMEOUT_USEC=60000000\nSTATUS=opening the database"] * 3
    with pytest.raises(TimeoutError):  # the requests stopped with the block
        async with asyncio.timeout(0.1):
            await loop.sock_recv(notify_socket, 4096)
    notifier.close()


async def test_the_watchdog_starves_while_an_adapter_stays_disconnected(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, notify_socket: socket.socket
) -> None:
    from bot.daemon.app import Bot

    settings = make_settings(tmp_path / "bot.db", fake_ollama.url, bot={"adapter_grace_s": 0.05})
    adapter = RecordingAdapter()
    systemd = SystemdEnvironment(str(tmp_path / "notify.sock"), watchdog_usec=150_000)
    bot = Bot(settings, [adapter], clock=clock, systemd=systemd)
    await bot.start()
    try:
        await datagrams(notify_socket, "WATCHDOG=1")
        adapter.connected = False  # the platform connection dropped and stays down
        # Within the grace period the watchdog may still be fed; once the status says the
        # adapter is not connected, three more watchdog periods pass without one.
        await datagrams(notify_socket, "not connected: test")
        later: list[str] = []
        for _ in range(3):
            later += await datagrams(notify_socket, "not connected: test")
        assert [m for m in later if "WATCHDOG=1" in m] == []
        healthy, details = await bot.supervisor.report()
        assert not healthy and details["adapters"] == {"test": False}

        adapter.connected = True  # back: the watchdog is fed again
        await datagrams(notify_socket, "WATCHDOG=1")
    finally:
        await bot.stop()


async def test_health_and_metrics_endpoints(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    from bot.daemon.app import Bot

    settings = make_settings(
        tmp_path / "bot.db", fake_ollama.url, observability={"listen": "127.0.0.1:0"}
    )
    adapter = RecordingAdapter()
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    try:
        await bot.dispatcher.submit(adapter.message("help"))
        await bot.dispatcher.wait_idle()
        assert bot.supervisor.health is not None
        base = f"http://127.0.0.1:{bot.supervisor.health.port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/healthz") as response:
                assert response.status == 200
                health = await response.json()
            async with session.get(f"{base}/metrics") as response:
                metrics = await response.text()
        assert health["status"] == "ok" and health["adapters"] == {"test": True}
        assert health["model"]["reachable"] is True
        assert 'lorebot_events_received_total{platform="test"}' in metrics
        # Which replica serves these, and that it leads (alone on its SQLite file).
        assert f'lorebot_replica_info{{id="{bot.replica.id}"}} 1.0' in metrics
        assert "\nlorebot_replica_leading 1.0" in metrics
    finally:
        await bot.stop()


async def test_a_second_daemon_on_the_same_database_is_refused(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    from bot.daemon.app import Bot
    from bot.errors import UserError

    settings = make_settings(tmp_path / "bot.db", fake_ollama.url)
    first = Bot(settings, [RecordingAdapter()], clock=clock)
    await first.start()
    try:
        second = Bot(settings, [RecordingAdapter()], clock=clock)
        with pytest.raises(UserError, match="already using"):
            await second.start()
    finally:
        await first.stop()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_backup_and_restore(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, "notes", "add", "channel:console/ops", "kept", "kept in the backup")
    code, out, _ = run_cli(capsys, "backup", str(env / "backup.db"))
    assert code == 0 and (env / "backup.db").exists()
    run_cli(capsys, "notes", "add", "channel:console/ops", "later", "written after the backup")

    code, out, _ = run_cli(capsys, "restore", str(env / "backup.db"))
    assert code == 0 and "restored" in out and "before-restore" in out
    _, out, _ = run_cli(capsys, "notes", "list")
    assert "kept" in out and "later" not in out

    (env / "junk.db").write_text("not a database at all" * 50)
    code, _, err = run_cli(capsys, "restore", str(env / "junk.db"))
    assert code == 1 and "not a lorebot database" in err


def test_restore_refuses_while_lorebot_runs(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bot.daemon.lockfile import DatabaseLock

    run_cli(capsys, "notes", "add", "channel:console/ops", "x", "y")
    run_cli(capsys, "backup", str(env / "backup.db"))
    lock = DatabaseLock(env / "cli.db")
    hold = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "time.sleep(30)\n"
    )
    # Another process holds the lock, as a running daemon does.
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(lock.path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        code, _, err = run_cli(capsys, "restore", str(env / "backup.db"))
        assert code == 1 and "stop it before restoring" in err
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_doctor_reports_each_check_with_a_fix(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 1
    assert "✓ database:" in out and "FTS5 works" in out
    assert "✗ model: unreachable at http://127.0.0.1:9" in out and "fix: start Ollama" in out


async def test_doctor_passes_against_a_working_model(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    code = await asyncio.to_thread(main, ["doctor"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "✓ model: qwen3:8b" in out and "context 32768 tokens" in out
    fake_ollama.models = ["llama3:8b"]
    code = await asyncio.to_thread(main, ["doctor"])
    assert code == 1 and "fix: ollama pull qwen3:8b" in capsys.readouterr().out


def test_logs_never_contain_secrets(caplog: pytest.LogCaptureFixture) -> None:
    token = "xoxb-1111-2222-SECRETSECRET"
    scrub = SecretFilter([token, "discord-token-value"])
    record = logging.LogRecord(
        "x",
        logging.INFO,
        __file__,
        1,
        "auth %s and %s",
        (f"Bearer {token}", "discord-token-value"),
        None,
    )
    scrub.filter(record)
    assert "SECRET" not in record.getMessage() and "discord-token-value" not in record.getMessage()


def test_json_log_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(logging.INFO, "json", ["hunter2-secret"])
    try:
        logging.getLogger("lorebot.test").info("hello %s", "hunter2-secret")
        line = capsys.readouterr().err.strip().splitlines()[-1]
        entry = json.loads(line)
        assert entry["message"] == "hello [REDACTED]" and entry["logger"] == "lorebot.test"
    finally:
        configure_logging(logging.WARNING, "text", [])


CHILD = """
import asyncio, sys
from memory import NoteDraft, Scope
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore

async def main():
    db = await SqliteDatabase.open(sys.argv[1])
    store = SqliteNoteStore(db)
    scope = Scope.parse("channel:console/crash")
    n = int(sys.argv[2])
    while True:
        await store.save(NoteDraft(scope, f"note-{n}", f"confirmed note {n}", "x" * 300),
                         actor="crash-test")
        print(n, flush=True)
        n += 1

asyncio.run(main())
"""


def test_sigkill_never_loses_a_confirmed_note(tmp_path: Path) -> None:
    import random
    import sqlite3

    path = tmp_path / "crash.db"
    confirmed: list[int] = []
    rng = random.Random(18)  # the same kill points on every run
    for attempt in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(attempt * 100_000)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert child.stdout is not None
        stop_after = rng.randint(3, 80)
        for count, line in enumerate(child.stdout, start=1):
            confirmed.append(int(line))
            if count == stop_after:
                break
        child.kill()  # SIGKILL, in the middle of the next write
        child.wait()
        child.stdout.close()
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            topics = {row[0] for row in conn.execute("SELECT topic FROM notes")}
        assert [n for n in confirmed if f"note-{n}" not in topics] == []


def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing: install Debian's systemd package (.ci/run does)")
    lorebot = Path(sys.executable).with_name("lorebot")
    unit = (ROOT / "systemd" / "lorebot.service").read_text()
    unit = unit.replace("/opt/lorebot/venv/bin/lorebot", str(lorebot))
    (tmp_path / "lorebot.service").write_text(unit)
    result = subprocess.run(
        [analyze, "verify", str(tmp_path / "lorebot.service")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for setting in (
        "Type=notify",
        "WatchdogSec=",
        "DynamicUser=yes",
        "StateDirectory=lorebot",
        "EnvironmentFile=",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "CapabilityBoundingSet=\n",
        "SystemCallFilter=@system-service",
    ):
        assert setting in unit
