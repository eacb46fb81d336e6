"""Reading a skill's resources and scripts, contained in its folder: no escape by `..`,
absolute paths or symlinks; resources only text files under `references/` or `assets/`,
scripts only files directly in `scripts/`; size-capped."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skills.types import Skill, SkillError

RESOURCE_DIRS = ("references", "assets")
TEXT_EXTENSIONS = frozenset({".md", ".txt", ".json", ".yaml", ".yml", ".csv", ".xml", ".toml"})
MAX_RESOURCE_BYTES = 256 * 1024
SCRIPT_DIR = "scripts"
MAX_SCRIPT_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScriptFile:
    """One script of a skill as read once: what a card shows and what runs are these bytes."""

    relative: str  # e.g. scripts/report.py
    data: bytes
    sha256: str
    executable: bool

    def first_lines(self, count: int = 8) -> list[str]:
        return self.data.decode("utf-8", errors="replace").splitlines()[:count]


def list_resources(skill: Skill) -> list[str]:
    """Readable resource paths, relative to the skill folder."""
    folder = skill.folder.resolve()
    found = []
    for sub in RESOURCE_DIRS:
        base = skill.folder / sub
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            readable = path.is_file() and path.suffix.lower() in TEXT_EXTENSIONS
            if readable and path.resolve().is_relative_to(folder):
                found.append(path.relative_to(skill.folder).as_posix())
    return found


def list_scripts(skill: Skill) -> list[str]:
    """Scripts the skill ships; they run only when the operator enabled skill scripts and a
    person approved the run."""
    base = skill.folder / "scripts"
    if not base.is_dir():
        return []
    return sorted(p.relative_to(skill.folder).as_posix() for p in base.iterdir() if p.is_file())


def read_resource(skill: Skill, relative: str) -> str:
    """The text of `relative` inside the skill folder, or SkillError saying why not."""
    pure = _relative_path(relative, "resource")
    if not pure.parts or pure.parts[0] not in RESOURCE_DIRS:
        raise SkillError("only files under references/ or assets/ can be read")
    if pure.suffix.lower() not in TEXT_EXTENSIONS:
        allowed = ", ".join(sorted(TEXT_EXTENSIONS))
        raise SkillError(f"only text files can be read ({allowed})")
    try:
        return _read_contained(skill, pure)
    except OSError as exc:
        raise SkillError(f"{pure} cannot be read: {exc.strerror or 'unknown error'}") from None
    except RuntimeError:  # Path.resolve() on a symlink loop, on Python 3.11
        raise SkillError(f"{pure} cannot be read: it is a symlink loop") from None


def _relative_path(relative: str, kind: str) -> PurePosixPath:
    """`relative` as a path inside a skill folder, or SkillError: no control characters,
    nothing absolute, no `..`."""
    if any(ord(char) < 32 for char in relative):
        raise SkillError(f"{kind} paths may not contain control characters")
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or Path(relative).is_absolute():
        raise SkillError(f"{kind} paths are relative to the skill folder")
    if ".." in pure.parts:
        raise SkillError(f"{kind} paths may not contain `..`")
    return pure


def read_script(skill: Skill, relative: str) -> ScriptFile:
    """The script `relative` (e.g. `scripts/report.py`, or just `report.py`) directly inside
    the skill's `scripts/` folder, read once and hashed; SkillError says why not."""
    pure = _relative_path(relative.strip(), "script")
    if len(pure.parts) == 1:
        pure = PurePosixPath(SCRIPT_DIR, *pure.parts)
    if len(pure.parts) != 2 or pure.parts[0] != SCRIPT_DIR:
        raise SkillError("only files directly in the skill's scripts/ folder can be run")
    try:
        path = (skill.folder / pure).resolve()
        if not path.is_relative_to((skill.folder / SCRIPT_DIR).resolve()):
            raise SkillError("the script points outside the skill's scripts/ folder")
        if not path.is_file():
            raise SkillError(f"{pure} does not exist in skill {skill.name}")
        size = path.stat().st_size
        if size > MAX_SCRIPT_BYTES:
            raise SkillError(f"{pure} is {size} bytes; at most {MAX_SCRIPT_BYTES} can be run")
        data = path.read_bytes()
        executable = bool(path.stat().st_mode & 0o111)
    except OSError as exc:
        raise SkillError(f"{pure} cannot be read: {exc.strerror or 'unknown error'}") from None
    except RuntimeError:  # Path.resolve() on a symlink loop, on Python 3.11
        raise SkillError(f"{pure} cannot be read: it is a symlink loop") from None
    return ScriptFile(pure.as_posix(), data, hashlib.sha256(data).hexdigest(), executable)


def _read_contained(skill: Skill, pure: PurePosixPath) -> str:
    folder = skill.folder.resolve()
    path = (skill.folder / pure).resolve()
    if not path.is_relative_to(folder):
        raise SkillError("the resource points outside the skill folder")
    if not path.is_file():
        raise SkillError(f"{pure} does not exist in skill {skill.name}")
    size = path.stat().st_size
    if size > MAX_RESOURCE_BYTES:
        raise SkillError(f"{pure} is {size} bytes; at most {MAX_RESOURCE_BYTES} can be read")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{pure} is not UTF-8 text") from None
