"""The skill catalog: discovery across roots, precedence with reported shadowing, hot reload.

Roots are searched in order and a later root wins a name collision; every shadowed path is
kept on the winner and logged. `refresh()` is cheap (one stat per skill file) and reloads
only when something changed, so it can run before every turn. A skill that cannot be read,
for whatever reason, is skipped with its reason and never stops the others.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from skills.parse import SKILL_FILE, failure_reason, load_skill
from skills.types import Skill, SkillError, Skipped

_log = logging.getLogger(__name__)

BUNDLED_ROOT = Path(__file__).parent / "bundled"
DEFAULT_CATALOG_BYTES = 4096

Snapshot = tuple[tuple[str, int, int], ...]


def _skill_files(root: Path) -> list[tuple[Path, os.stat_result]]:
    """Folders directly under `root` holding a SKILL.md file, sorted by name, each with
    that file's stat (one per skill: the catalog checks them before every turn); none when
    the root cannot be listed."""
    try:
        with os.scandir(root) as entries:
            names = sorted(entry.name for entry in entries if not entry.name.startswith("."))
    except OSError as exc:
        _log.debug("cannot list skills in %s: %s", root, exc)
        return []
    found = []
    for name in names:
        try:
            info = os.stat(os.path.join(root, name, SKILL_FILE))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((root / name, info))
    return found


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
        # The model's catalog per allowed set, until the next reload (asked several times
        # a turn).
        self._model_catalogs: dict[frozenset[str] | None, list[str]] = {}

    def _take_snapshot(self) -> Snapshot:
        return tuple(
            (str(folder), info.st_mtime_ns, info.st_size)
            for root in self.roots
            for folder, info in _skill_files(root)
        )

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
            for folder, _ in _skill_files(root):
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
        self._model_catalogs = {}

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

        Skills marked `disable-model-invocation` are left out; what does not fit is logged
        (once per reload: the catalog is kept until a skill changes)."""
        allow = None if allowed is None else frozenset(allowed)
        self.refresh()
        if allow not in self._model_catalogs:
            self._model_catalogs[allow] = self._fit_catalog(allow)
        return list(self._model_catalogs[allow])

    def _fit_catalog(self, allow: frozenset[str] | None) -> list[str]:
        lines, used, left_out = [], 0, []
        for skill in self._skills.values():
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
