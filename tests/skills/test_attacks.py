"""Skill folders built to mislead: front matter whose values YAML reads as something else."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from skills.catalog import Catalog
from skills.parse import check_strict
from tests.skills.helpers import write_skill

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
