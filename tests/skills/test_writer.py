"""Writing an approved skill: the name is checked before it becomes a folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills.types import SkillError
from skills.writer import write_skill

TEXT = "---\nname: outside\ndescription: Escapes. Use when escaping.\n---\nbody\n"


@pytest.mark.parametrize("name", ["../outside", "../../outside", ".", "out/side"])
def test_an_invalid_name_is_refused_before_touching_the_disk(tmp_path: Path, name: str) -> None:
    root = tmp_path / "a" / "root"
    with pytest.raises(SkillError, match="the skill name is not valid") as refused:
        write_skill(root, name, TEXT)
    assert str(tmp_path) not in str(refused.value)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) in (
        [],
        ["a", "a/root"],
    )
