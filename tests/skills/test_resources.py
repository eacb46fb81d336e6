"""Resource reads stay inside the skill folder, text only, size-capped."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills.parse import load_skill
from skills.resources import MAX_RESOURCE_BYTES, list_resources, list_scripts, read_resource
from skills.types import Skill, SkillError
from tests.support.skills import write_skill


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    folder = write_skill(tmp_path / "root", "runbook")
    (folder / "references").mkdir()
    (folder / "references" / "steps.md").write_text("1. check the disk\n")
    (folder / "assets").mkdir()
    (folder / "assets" / "big.txt").write_text("x" * (MAX_RESOURCE_BYTES + 1))
    (folder / "assets" / "logo.png").write_bytes(b"\x89PNG")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fix.sh").write_text("rm -rf /\n")
    (tmp_path / "secret.md").write_text("the root password")
    (folder / "references" / "escape.md").symlink_to(tmp_path / "secret.md")
    return load_skill(folder, tmp_path / "root")


def test_reads_a_reference(skill: Skill) -> None:
    assert read_resource(skill, "references/steps.md") == "1. check the disk\n"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("references/../../secret.md", "`..`"),
        ("/etc/passwd", "relative"),
        ("references/escape.md", "outside the skill folder"),
        ("assets/logo.png", "only text files"),
        ("assets/big.txt", "can be read"),
        ("scripts/fix.sh", "only files under references/ or assets/"),
        ("SKILL.md", "only files under references/ or assets/"),
        ("references/missing.md", "does not exist"),
        ("references\\..\\..\\secret.md", "`..`"),
    ],
)
def test_refuses_reads_outside_the_rules(skill: Skill, path: str, reason: str) -> None:
    with pytest.raises(SkillError, match=reason):
        read_resource(skill, path)


def test_lists_resources_and_scripts_without_escapes(skill: Skill) -> None:
    assert list_resources(skill) == ["references/steps.md", "assets/big.txt"]
    assert list_scripts(skill) == ["scripts/fix.sh"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("references/steps.md\x00.txt", "control characters"),
        ("references/loop.md", "symlink loop"),
    ],
)
def test_unreadable_paths_are_skill_errors_not_crashes(
    skill: Skill, path: str, reason: str
) -> None:
    (skill.folder / "references" / "loop.md").symlink_to(skill.folder / "references" / "loop.md")
    with pytest.raises(SkillError, match=reason):
        read_resource(skill, path)
