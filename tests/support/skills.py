"""Writing SKILL.md files for tests."""

from __future__ import annotations

from pathlib import Path


def write_skill(
    root: Path,
    folder: str,
    *,
    name: str | None = None,
    description: str = "Does a thing. Use when testing.",
    body: str = "# Steps\n1. Do the thing.\n",
    extra: str = "",
) -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {name or folder}\ndescription: {description}\n{extra}---\n{body}"
    (path / "SKILL.md").write_text(text, encoding="utf-8")
    return path
