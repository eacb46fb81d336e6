"""Skill folders built to mislead: links in place of a skill's folders or files, files that
change between two reads, and front matter whose values YAML reads as something else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.cli.main import main
from skills.catalog import Catalog
from skills.parse import check_strict, load_skill
from skills.resources import list_resources, list_scripts, read_resource, read_script
from skills.snapshot import read_snapshot
from skills.types import Skill, SkillError
from tests.support.skills import write_skill


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    folder = write_skill(tmp_path / "root", "runbook")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print('run')\n")
    (folder / "docs").mkdir()
    (folder / "docs" / "steps.md").write_text("1. check the disk\n")
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "tool.py").write_text("print('the host')\n")
    (tmp_path / "host" / "secret.md").write_text("the root password\n")
    return load_skill(folder, tmp_path / "root")


# --- 2. no symlinked component below the skill folder ----------------------------------------


def test_a_scripts_folder_linked_to_the_host_is_neither_listed_nor_read(
    skill: Skill, tmp_path: Path
) -> None:
    os.rename(skill.folder / "scripts", skill.folder / "real-scripts")
    (skill.folder / "scripts").symlink_to(tmp_path / "host")
    assert list_scripts(skill) == []
    with pytest.raises(SkillError, match="scripts is a symlink, and lorebot follows no link"):
        read_script(skill, "scripts/tool.py")
    warnings = load_skill(skill.folder, skill.root).warnings
    assert "scripts/ is a symlink, so lorebot reads and runs nothing in it" in warnings


def test_a_linked_script_is_refused_even_inside_the_skill(skill: Skill) -> None:
    (skill.folder / "scripts" / "alias.py").symlink_to(skill.folder / "scripts" / "run.py")
    assert list_scripts(skill) == ["scripts/run.py"]
    with pytest.raises(SkillError, match="scripts/alias.py is a symlink"):
        read_script(skill, "alias.py")
    assert read_script(skill, "run.py").data == b"print('run')\n"


@pytest.mark.parametrize("sub", ["references", "assets"])
def test_a_linked_resource_folder_is_refused_even_when_it_points_inside(
    skill: Skill, sub: str
) -> None:
    (skill.folder / sub).symlink_to(skill.folder / "docs")
    assert list_resources(skill) == []
    with pytest.raises(SkillError, match=f"{sub} is a symlink"):
        read_resource(skill, f"{sub}/steps.md")


def test_a_resource_folder_linked_to_the_host_reads_nothing(skill: Skill, tmp_path: Path) -> None:
    (skill.folder / "references").symlink_to(tmp_path / "host")
    with pytest.raises(SkillError, match="outside the skill folder"):
        read_resource(skill, "references/secret.md")


def test_a_linked_folder_below_a_resource_folder_is_not_listed(skill: Skill) -> None:
    (skill.folder / "references").mkdir()
    (skill.folder / "references" / "own.md").write_text("mine\n")
    (skill.folder / "references" / "more").symlink_to(skill.folder / "docs")
    assert list_resources(skill) == ["references/own.md"]
    with pytest.raises(SkillError, match="references/more is a symlink"):
        read_resource(skill, "references/more/steps.md")


# --- 3. the snapshot a run stages ------------------------------------------------------------


def test_a_snapshot_holds_every_real_file_and_names_what_it_leaves_out(
    skill: Skill, tmp_path: Path
) -> None:
    (skill.folder / "scripts" / "host.py").symlink_to(tmp_path / "host" / "tool.py")
    (skill.folder / ".git").mkdir()
    (skill.folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(skill.folder / "scripts" / "pipe")
    snapshot = read_snapshot(skill.folder)
    assert [f.relative for f in snapshot.files] == ["SKILL.md", "docs/steps.md", "scripts/run.py"]
    assert snapshot.folders == ("docs", "scripts")
    assert snapshot.left_out == ("scripts/host.py", "scripts/pipe")


def test_the_snapshot_hash_covers_every_files_bytes_and_mode(skill: Skill) -> None:
    first = read_snapshot(skill.folder).sha256
    assert read_snapshot(skill.folder).sha256 == first
    os.utime(skill.folder / "docs" / "steps.md", ns=(1, 10**18))
    assert read_snapshot(skill.folder).sha256 == first  # a touch changes nothing that runs

    (skill.folder / "docs" / "steps.md").write_text("1. wipe the disk\n")
    edited = read_snapshot(skill.folder).sha256
    assert edited != first
    (skill.folder / "docs" / "steps.md").chmod(0o755)
    assert read_snapshot(skill.folder).sha256 not in (first, edited)
    (skill.folder / "docs" / "new.md").write_text("")
    assert len({first, edited, read_snapshot(skill.folder).sha256}) == 3


def test_a_snapshot_keeps_the_size_budget(skill: Skill) -> None:
    (skill.folder / "docs" / "big.txt").write_bytes(b"x" * 4096)
    with pytest.raises(SkillError, match="too large to run its scripts"):
        read_snapshot(skill.folder, max_bytes=4096)
    assert read_snapshot(skill.folder, max_bytes=8192).size > 4096


# --- 16. front matter values are text --------------------------------------------------------


def test_a_numeric_name_and_description_are_text(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "123", name="123", description="42")
    catalog = Catalog([tmp_path])
    skill = catalog.get("123")
    assert skill is not None, catalog.skipped
    assert (skill.name, skill.description, skill.warnings) == ("123", "42", ())
    assert catalog.model_catalog() == ["- 123: 42"]
    assert check_strict(folder) == []


@pytest.mark.parametrize(
    ("name", "description", "shown"),
    [("1.0", "yes", "- 1.0: yes"), ("2024-01-01", "0x1F", "- 2024-01-01: 0x1F")],
)
def test_text_fields_keep_what_was_written(
    tmp_path: Path, name: str, description: str, shown: str
) -> None:
    write_skill(tmp_path, name, name=name, description=description)
    assert Catalog([tmp_path]).model_catalog() == [shown]


def test_a_name_that_is_not_text_says_so(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "listed", name="[a, b]", description="{x: 1}")
    problems = check_strict(folder)
    assert any(p.endswith("`name` must be text, not a list") for p in problems)
    assert any(p.endswith("`description` must be text, not a mapping") for p in problems)
    [skipped] = Catalog([tmp_path]).skipped
    assert skipped.reason == "`description` must be text, not a mapping"


def test_lorebot_skills_lists_and_validates_a_numeric_name(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_skill(env / "mine", "123", name="123", description="42")
    assert main(["skills", "list", "--dir", str(env / "mine")]) == 0
    out = capsys.readouterr().out
    assert "123: 42\n" in out and f"from {folder / 'SKILL.md'}" in out
    assert "missing" not in out and "skipped" not in out
    assert main(["skills", "validate", str(folder)]) == 0
    assert f"{folder}: ok" in capsys.readouterr().out
