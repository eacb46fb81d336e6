"""`lorebot notes export DIR` again into an earlier export: forgotten notes stay forgotten."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main

OPS = "channel:console/ops"
DEV = "channel:console/dev"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run_cli(capsys, *argv)
    assert (code, err) == (0, ""), err
    return out


def topics(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`scope topic` of every note `notes list` shows."""
    found, scope = [], ""
    for line in ok(capsys, "notes", "list").splitlines():
        if line.startswith("  - "):
            found.append(f"{scope} {line[4:].split(':')[0]}")
        else:
            scope = line.split(" ")[0]
    return found


@pytest.fixture
def exported(env: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Notes A and B in #ops and C in #dev, exported to `env/export`."""
    ok(capsys, "notes", "add", OPS, "alpha", "A stays")
    ok(capsys, "notes", "add", OPS, "beta", "B is forgotten later")
    ok(capsys, "notes", "add", DEV, "gamma", "C is forgotten with its channel's last note")
    assert ok(capsys, "notes", "export", str(env / "export")) == (
        f"exported 3 notes to {env / 'export'}\n"
    )
    return env / "export"


def test_a_note_forgotten_since_the_last_export_does_not_come_back_on_import(
    exported: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(capsys, "notes", "forget", OPS, "beta")
    ok(capsys, "notes", "forget", DEV, "gamma")

    out = ok(capsys, "notes", "export", str(exported))
    assert out == f"exported 1 notes to {exported}\nremoved 2 files of forgotten notes\n"
    assert not (exported / "channel/console/dev").exists()

    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(exported.parent / "fresh.db"))
    ok(capsys, "notes", "import", str(exported))
    assert topics(capsys) == [f"{OPS} alpha"]


def test_a_scoped_export_mirrors_only_its_scope(
    exported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok(capsys, "notes", "forget", OPS, "beta")
    ok(capsys, "notes", "forget", DEV, "gamma")
    out = ok(capsys, "notes", "export", str(exported), "--scope", OPS)
    assert out.endswith("removed 1 file of forgotten notes\n")
    assert (exported / "channel/console/dev/gamma.md").exists()
    assert not (exported / "channel/console/ops/beta.md").exists()


def test_files_the_export_did_not_write_are_refused_then_kept_with_force(
    exported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (exported / "README.txt").write_text("my notes about the export")
    hand = exported / "channel/console/ops/draft.md"
    hand.write_text("a file of my own, no front matter\n")
    (exported / ".git").mkdir()  # hidden entries, such as a git repository, are ignored
    (exported / ".git/HEAD").write_text("ref: refs/heads/main\n")
    ok(capsys, "notes", "forget", OPS, "beta")

    code, out, err = run_cli(capsys, "notes", "export", str(exported))
    assert (code, out) == (1, "")
    assert err == (
        f"lorebot: {exported} holds 2 files that lorebot's export did not write (README.txt): "
        "export into an empty folder or an earlier export, or pass --force to write beside them\n"
    )
    assert (exported / "channel/console/ops/beta.md").exists()  # nothing was written

    out = ok(capsys, "notes", "export", str(exported), "--force")
    assert out.endswith("removed 1 file of forgotten notes\n")
    assert not (exported / "channel/console/ops/beta.md").exists()
    assert hand.read_text() == "a file of my own, no front matter\n"
    assert (exported / "README.txt").exists() and (exported / ".git/HEAD").exists()


@pytest.mark.parametrize(
    ("dest", "reason"),
    [
        ("a-file", "it is a file"),
        ("a-file/sub", "{env}/a-file is not a folder"),
        ("/proc/lorebot-export", "no such file or directory"),
    ],
)
def test_a_folder_it_cannot_write_is_one_line_without_a_traceback(
    env: Path, capsys: pytest.CaptureFixture[str], dest: str, reason: str
) -> None:
    ok(capsys, "notes", "add", OPS, "alpha", "A")
    (env / "a-file").write_text("in the way")
    code, out, err = run_cli(capsys, "notes", "export", dest)
    assert (code, out) == (1, "")
    assert err == f"lorebot: cannot write the export to {dest}: {reason.format(env=env)}\n"
