"""The skill catalog: discovery across roots, precedence with reported shadowing, hot reload.

Roots are searched in order and a later root wins a name collision; every shadowed path is
kept on the winner and logged. `refresh()` is cheap (one stat per skill file) and reloads
only when something changed, so it can run before every turn. A skill that cannot be read,
for whatever reason, is skipped with its reason and never stops the others.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from skills.parse import SKILL_FILE, failure_reason, load_skill
from skills.types import Skill, SkillError, Skipped

_log = logging.getLogger(__name__)

BUNDLED_ROOT = Path(__file__).parent / "bundled"
DEFAULT_CATALOG_BYTES = 4096

Snapshot = tuple[tuple[str, int, int], ...]


def _skill_folders(root: Path) -> list[Path]:
    """Folders directly under `root` holding a SKILL.md, sorted by name; none when the
    root cannot be listed."""
    try:
        entries = list(root.iterdir()) if root.is_dir() else []
    except OSError as exc:
        _log.debug("cannot list skills in %s: %s", root, exc)
        return []
    return sorted(
        (p for p in entries if not p.name.startswith(".") and _is_file(p / SKILL_FILE)),
        key=lambda p: p.name,
    )


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _skip(path: Path, exc: Exception) -> Skipped:
    """Record a skill that could not be loaded; an unexpected failure keeps its traceback."""
    reason = failure_reason(exc)
    unexpected = not isinstance(exc, SkillError | OSError)
    _log.warning("skipped skill %s: %s", path, reason, exc_info=unexpected)
    return Skipped(path, reason)


class Catalog:
    """All skills lorebot can load, keyed by name."""

    def __init__(self, roots: Sequence[Path], *, catalog_bytes: int = DEFAULT_CATALOG_BYTES):
        self.roots = tuple(roots)
        self.catalog_bytes = catalog_bytes
        self._skills: dict[str, Skill] = {}
        self._skipped: list[Skipped] = []
        self._snapshot: Snapshot | None = None

    def _take_snapshot(self) -> Snapshot:
        entries = []
        for root in self.roots:
            for folder in _skill_folders(root):
                try:
                    stat = (folder / SKILL_FILE).stat()
                except OSError:
                    continue
                entries.append((str(folder), stat.st_mtime_ns, stat.st_size))
        return tuple(entries)

    def refresh(self) -> bool:
        """Reload when a skill was added, changed or deleted; True when it reloaded."""
        snapshot = self._take_snapshot()
        if snapshot == self._snapshot:
            return False
        self._snapshot = snapshot
        self._load()
        return True

    def _load(self) -> None:
        skills: dict[str, Skill] = {}
        skipped: list[Skipped] = []
        for root in self.roots:
            for folder in _skill_folders(root):
                try:
                    skill = load_skill(folder, root)
                except Exception as exc:  # one unreadable skill must not stop the others
                    skipped.append(_skip(folder / SKILL_FILE, exc))
                    continue
                for warning in skill.warnings:
                    _log.info("skill %s: %s", skill.path, warning)
                previous = skills.get(skill.name)
                if previous is not None:
                    shadowed = (*previous.shadows, previous.path)
                    skill = dataclasses.replace(skill, shadows=shadowed)
                    _log.warning(
                        "skill %r from %s shadows %s",
                        skill.name,
                        skill.path,
                        ", ".join(map(str, shadowed)),
                    )
                skills[skill.name] = skill
        self._skills = dict(sorted(skills.items()))
        self._skipped = skipped

    def get(self, name: str) -> Skill | None:
        self.refresh()
        return self._skills.get(name)

    def all(self) -> list[Skill]:
        self.refresh()
        return list(self._skills.values())

    @property
    def skipped(self) -> list[Skipped]:
        self.refresh()
        return list(self._skipped)

    def model_catalog(self, allowed: Iterable[str] | None = None) -> list[str]:
        """The `- name: description` lines the model sees, sorted, within the byte budget.

        Skills marked `disable-model-invocation` are left out; what does not fit is logged."""
        allow = None if allowed is None else set(allowed)
        lines, used, left_out = [], 0, []
        for skill in self.all():
            if not skill.model_invocable or (allow is not None and skill.name not in allow):
                continue
            cost = len(skill.catalog_line.encode()) + 1
            if used + cost > self.catalog_bytes:
                left_out.append(skill.name)
                continue
            lines.append(skill.catalog_line)
            used += cost
        if left_out:
            _log.warning("skill catalog budget full; left out: %s", ", ".join(left_out))
        return lines
