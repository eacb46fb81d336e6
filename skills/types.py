"""Value types of the skill catalog."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class SkillError(ValueError):
    """A skill cannot be used; the message says why, for a person to fix."""


@dataclass(frozen=True, slots=True)
class Skill:
    """A loaded SKILL.md: metadata for the catalog, the body for when it is loaded."""

    name: str
    description: str
    folder: Path
    path: Path  # the resolved SKILL.md, what a card shows
    root: Path
    body: str
    size: int
    sha256: str
    metadata: dict[str, Any]
    model_invocable: bool = True
    warnings: tuple[str, ...] = ()
    shadows: tuple[Path, ...] = field(default=())

    @property
    def catalog_line(self) -> str:
        return f"- {self.name}: {self.description}"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A skill folder that could not be loaded, and why."""

    path: Path
    reason: str
