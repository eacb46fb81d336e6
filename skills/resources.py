"""Reading a skill's resources, contained in its folder: no escape by `..`, absolute paths
or symlinks, only text files under `references/` or `assets/`, size-capped."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from skills.types import Skill, SkillError

RESOURCE_DIRS = ("references", "assets")
TEXT_EXTENSIONS = frozenset({".md", ".txt", ".json", ".yaml", ".yml", ".csv", ".xml", ".toml"})
MAX_RESOURCE_BYTES = 256 * 1024


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
    """Scripts the skill ships; lorebot lists them but never runs them."""
    base = skill.folder / "scripts"
    if not base.is_dir():
        return []
    return sorted(p.relative_to(skill.folder).as_posix() for p in base.iterdir() if p.is_file())


def read_resource(skill: Skill, relative: str) -> str:
    """The text of `relative` inside the skill folder, or SkillError saying why not."""
    if any(ord(char) < 32 for char in relative):
        raise SkillError("resource paths may not contain control characters")
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or Path(relative).is_absolute():
        raise SkillError("resource paths are relative to the skill folder")
    if ".." in pure.parts:
        raise SkillError("resource paths may not contain `..`")
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
