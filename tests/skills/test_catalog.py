"""Discovery across roots: precedence, reported shadowing, hot reload, the model's catalog."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from skills.catalog import Catalog
from tests.support.skills import write_skill


def test_later_roots_win_and_every_shadowed_path_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    roots = [tmp_path / "bundled", tmp_path / "home", tmp_path / "user"]
    for root in roots:
        write_skill(root, "deploy", description=f"Deploy from {root.name}. Use when deploying.")
    write_skill(roots[0], "only-bundled")
    with caplog.at_level(logging.WARNING):
        catalog = Catalog(roots)
        skill = catalog.get("deploy")
    assert skill is not None and skill.description.startswith("Deploy from user")
    assert skill.shadows == (
        roots[0] / "deploy" / "SKILL.md",
        roots[1] / "deploy" / "SKILL.md",
    )
    assert "shadows" in caplog.text and str(roots[1] / "deploy" / "SKILL.md") in caplog.text
    assert [s.name for s in catalog.all()] == ["deploy", "only-bundled"]


def test_one_bad_skill_never_hides_the_others(tmp_path: Path) -> None:
    write_skill(tmp_path, "good")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("---\nname: broken\n---\n")
    catalog = Catalog([tmp_path])
    assert [s.name for s in catalog.all()] == ["good"]
    [skipped] = catalog.skipped
    assert skipped.path.name == "SKILL.md" and "description" in skipped.reason


def test_hot_reload_sees_add_edit_and_delete(tmp_path: Path) -> None:
    catalog = Catalog([tmp_path])
    assert catalog.model_catalog() == []
    folder = write_skill(tmp_path, "alpha", description="First. Use when first.")
    assert catalog.model_catalog() == ["- alpha: First. Use when first."]
    write_skill(tmp_path, "alpha", description="Changed. Use when changed.")
    os.utime(folder / "SKILL.md", ns=(1, 10**18))  # a distinct mtime even on coarse clocks
    assert catalog.model_catalog() == ["- alpha: Changed. Use when changed."]
    (folder / "SKILL.md").unlink()
    assert catalog.model_catalog() == []


def test_catalog_is_sorted_budgeted_and_leaves_out_people_only_skills(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path, "zeta", description="Z. Use when z.")
    write_skill(tmp_path, "alpha", description="A. Use when a.")
    write_skill(tmp_path, "manual", extra="disable-model-invocation: true\n")
    write_skill(tmp_path, "huge", description="h" * 900)
    with caplog.at_level(logging.WARNING):
        lines = Catalog([tmp_path], catalog_bytes=300).model_catalog()
    assert lines == ["- alpha: A. Use when a.", "- zeta: Z. Use when z."]
    assert "left out: huge" in caplog.text
    assert Catalog([tmp_path]).model_catalog(allowed={"zeta"}) == ["- zeta: Z. Use when z."]


def test_a_symlinked_skill_file_resolves(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "elsewhere", "linked")
    root = tmp_path / "root"
    (root / "linked").mkdir(parents=True)
    (root / "linked" / "SKILL.md").symlink_to(real / "SKILL.md")
    skill = Catalog([root]).get("linked")
    assert skill is not None and skill.path == (real / "SKILL.md").resolve()
