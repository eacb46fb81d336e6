"""Writing a skill the model drafted and a person approved: validated, atomic, with provenance."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from skills.parse import (
    SKILL_FILE,
    check_strict,
    name_problems,
    parse_front_matter,
    split_front_matter,
)
from skills.types import SkillError

CREATED_BY = "lorebot"


def render_skill(name: str, description: str, body: str, metadata: Mapping[str, Any]) -> str:
    front = yaml.safe_dump(
        {"name": name, "description": description, "metadata": dict(metadata)},
        sort_keys=False,
        allow_unicode=True,
        width=1000,
    )
    return f"---\n{front}---\n\n{body.strip()}\n"


def created_by_lorebot(folder: Path) -> bool:
    """Whether an existing skill carries lorebot's provenance, so lorebot may update it."""
    try:
        data = parse_front_matter(split_front_matter((folder / SKILL_FILE).read_text())[0])
    except (OSError, SkillError, UnicodeDecodeError):
        return False
    metadata = data.get("metadata")
    return isinstance(metadata, dict) and metadata.get("created-by") == CREATED_BY


def check_new_name(name: str) -> None:
    """Refuse a name that is not a valid skill name, before it is used as a folder name:
    no paths, no `.`, no uppercase."""
    problems = name_problems(name, name)
    if problems:
        raise SkillError("the skill name is not valid: " + "; ".join(problems))


def write_skill(root: Path, name: str, text: str) -> Path:
    """Write `root/name/SKILL.md` atomically after a strict check of the result.

    A new skill appears as a whole folder; an existing one may be replaced only when
    lorebot created it."""
    check_new_name(name)
    folder = root / name
    if folder.exists() and not created_by_lorebot(folder):
        raise SkillError(
            f"a skill named {name!r} already exists at {folder} and was not created by "
            "lorebot, so lorebot will not change it"
        )
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        staged = staging / name
        staged.mkdir()
        (staged / SKILL_FILE).write_text(text, encoding="utf-8")
        problems = check_strict(staged)
        if problems:
            raise SkillError("; ".join(p.split(": ", 1)[-1] for p in problems))
        if folder.exists():
            os.replace(staged / SKILL_FILE, folder / SKILL_FILE)
        else:
            os.replace(staged, folder)
    finally:
        for leftover in sorted(staging.rglob("*"), reverse=True):
            leftover.unlink() if leftover.is_file() else leftover.rmdir()
        staging.rmdir()
    return folder / SKILL_FILE
