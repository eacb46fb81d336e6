"""`lorebot backup DEST` into a folder (dated files, pruning, a folder it creates), onto a
file that is there already, and onto paths it cannot write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import start_harness

STAMPED = re.compile(r"lorebot-\d{4}-\d{2}-\d{2}T\d{6}Z\.db")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def noted(env: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The `env` folder with a database holding one note."""
    assert run_cli(capsys, "notes", "add", "channel:console/ops", "kept", "in the backup")[0] == 0
    return env


def test_a_folder_gets_a_dated_backup_that_restores(
    noted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = noted / "backups"
    folder.mkdir()
    code, out, _ = run_cli(capsys, "backup", str(folder))
    [written] = list(folder.iterdir())
    assert code == 0 and STAMPED.fullmatch(written.name)
    assert out == f"backed up {noted / 'cli.db'} to {written}\n"

    run_cli(capsys, "notes", "add", "channel:console/ops", "later", "after the backup")
    assert run_cli(capsys, "restore", str(written))[0] == 0
    _, listed, _ = run_cli(capsys, "notes", "list")
    assert "kept" in listed and "later" not in listed


def test_a_folder_keeps_backup_keep_dated_backups_and_never_other_files(
    noted: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_JOBS__BACKUP_KEEP", "3")
    folder = noted / "backups"
    folder.mkdir()
    older = [
        "lorebot-2026-01-01.db",  # a daily backup of the maintenance job
        "lorebot-2026-01-02T080000Z.db",
        "lorebot-2026-01-03.db",
        "lorebot-2026-01-04T093000Z.db",
    ]
    foreign = ["lorebot-backup.db", "lorebot-notes.db", "other.db", "lorebot-2026-01-01.db.txt"]
    for name in older + foreign:
        (folder / name).write_text("x")
    # A file path is written as named, and prunes nothing.
    mine = folder / "mine.db"
    assert run_cli(capsys, "backup", str(mine))[1].endswith(f" to {mine}\n")
    foreign.append("mine.db")

    code, out, _ = run_cli(capsys, "backup", str(folder))

    assert code == 0
    assert out.splitlines()[1] == "removed 2 older backups (jobs.backup_keep = 3)"
    left = sorted(p.name for p in folder.iterdir())
    [new] = [name for name in left if STAMPED.fullmatch(name) and name not in older]
    assert left == sorted([*older[2:], new, *foreign])


def test_a_missing_folder_with_a_trailing_slash_is_created_for_a_dated_backup(
    noted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = noted / "new" / "backups"
    code, out, err = run_cli(capsys, "backup", f"{folder}/")
    assert (code, err) == (0, ""), err
    [written] = list(folder.iterdir())
    assert STAMPED.fullmatch(written.name) and out == f"backed up {noted / 'cli.db'} to {written}\n"
    assert folder.stat().st_mode & 0o777 == 0o700  # it holds copies of every note


def test_an_existing_file_is_replaced_only_with_force(
    noted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = noted / "old.db"
    old.write_text("an earlier backup, or anything else")

    code, out, err = run_cli(capsys, "backup", str(old))
    assert (code, out) == (1, "")
    assert err == f"lorebot: {old} exists: add --force to replace it\n"
    assert old.read_text() == "an earlier backup, or anything else"

    code, out, _ = run_cli(capsys, "backup", str(old), "--force")
    assert code == 0 and out == f"backed up {noted / 'cli.db'} to {old}\n"
    assert run_cli(capsys, "restore", str(old))[0] == 0  # a backup now


@pytest.mark.parametrize(
    ("dest", "reason"),
    [
        ("missing/dir/x.db", "the folder {env}/missing/dir does not exist"),
        ("a-file/x.db", "{env}/a-file is not a folder"),
        ("cli.db", "it is the database itself"),
        ("/proc/lorebot-x.db", "no such file or directory"),
    ],
)
def test_a_path_it_cannot_write_is_one_line_without_a_traceback(
    noted: Path, capsys: pytest.CaptureFixture[str], dest: str, reason: str
) -> None:
    (noted / "a-file").write_text("not a folder")
    target = dest if dest.startswith("/") else str(noted / dest)
    code, out, err = run_cli(capsys, "backup", target)
    assert (code, out) == (1, "")
    assert err == f"lorebot: cannot write the backup to {target}: {reason.format(env=noted)}\n"
    assert not (noted / "missing").exists()


async def test_daily_backups_share_the_folder_and_spare_other_files(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    folder = tmp_path / "bk"
    folder.mkdir()
    foreign = ["lorebot-backup.db", "lorebot-notes.db", "other.db"]
    for name in [*foreign, "lorebot-2026-11-01T120000Z.db"]:
        (folder / name).write_text("x")
    h = await start_harness(
        tmp_path, fake_ollama, clock, jobs={"backup_dir": str(folder), "backup_keep": 2}
    )
    maintenance = h.bot.jobs.jobs["maintenance"]
    try:
        for _ in range(2):
            await h.bot.jobs.run(maintenance, "all", clock.now)
            clock.advance(days=1)
    finally:
        await h.bot.stop()
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted([*foreign, "lorebot-2026-11-02.db", "lorebot-2026-11-03.db"])
