"""Reading a skill's resources and scripts, contained in its folder: no escape by `..`,
absolute paths or symlinks (no link is followed below the skill folder, not even one that
stays inside it); resources only text files under `references/` or `assets/`, scripts only
files directly in `scripts/`; size-capped."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skills.types import Skill, SkillError

RESOURCE_DIRS = ("references", "assets")
TEXT_EXTENSIONS = frozenset({".md", ".txt", ".json", ".yaml", ".yml", ".csv", ".xml", ".toml"})
MAX_RESOURCE_BYTES = 256 * 1024
SCRIPT_DIR = "scripts"
MAX_SCRIPT_BYTES = 1024 * 1024
# Opening one path component below the skill folder: never through a link, never blocking
# on a FIFO put where a file was.
_NO_LINK = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True, slots=True)
class ScriptFile:
    """One script of a skill as read once: what a card shows and what runs are these bytes."""

    relative: str  # e.g. scripts/report.py
    data: bytes
    sha256: str
    executable: bool

    def first_lines(self, count: int = 8) -> list[str]:
        return self.data.decode("utf-8", errors="replace").splitlines()[:count]


def linked_folders(folder: Path) -> list[str]:
    """The `references/`, `assets/` and `scripts/` of the skill in `folder` that are
    symlinks: lorebot reads and runs nothing in them."""
    return [sub for sub in (*RESOURCE_DIRS, SCRIPT_DIR) if (folder / sub).is_symlink()]


def list_resources(skill: Skill) -> list[str]:
    """Readable resource paths, relative to the skill folder: text files reached without
    passing through a symlink."""
    found = []
    for sub in RESOURCE_DIRS:
        base = skill.folder / sub
        if base.is_symlink() or not base.is_dir():
            continue
        for path in sorted(_real_files(base)):
            if path.suffix.lower() in TEXT_EXTENSIONS:
                found.append(path.relative_to(skill.folder).as_posix())
    return found


def _real_files(base: Path) -> Iterator[Path]:
    """Regular files under `base`, never descending into a linked folder."""
    for here, folders, files in os.walk(base):
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(here, f))]
        for name in files:
            path = Path(here, name)
            if not path.is_symlink() and path.is_file():
                yield path


def list_scripts(skill: Skill) -> list[str]:
    """Scripts the skill ships: real files directly in a real `scripts/` folder. They run
    only when the operator enabled skill scripts and a person approved the run."""
    base = skill.folder / SCRIPT_DIR
    if base.is_symlink() or not base.is_dir():
        return []
    return sorted(
        p.relative_to(skill.folder).as_posix()
        for p in base.iterdir()
        if not p.is_symlink() and p.is_file()
    )


def read_resource(skill: Skill, relative: str) -> str:
    """The text of `relative` inside the skill folder, or SkillError saying why not."""
    pure = _relative_path(relative, "resource")
    if not pure.parts or pure.parts[0] not in RESOURCE_DIRS:
        raise SkillError("only files under references/ or assets/ can be read")
    if pure.suffix.lower() not in TEXT_EXTENSIONS:
        allowed = ", ".join(sorted(TEXT_EXTENSIONS))
        raise SkillError(f"only text files can be read ({allowed})")
    data = _read_contained(skill, pure, MAX_RESOURCE_BYTES, "the skill folder")[0]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{pure} is not UTF-8 text") from None


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
    data, mode = _read_contained(skill, pure, MAX_SCRIPT_BYTES, "the skill's scripts/ folder")
    executable = bool(mode & 0o111)
    return ScriptFile(pure.as_posix(), data, hashlib.sha256(data).hexdigest(), executable)


def _read_contained(skill: Skill, pure: PurePosixPath, limit: int, where: str) -> tuple[bytes, int]:
    """The bytes and mode of the regular file `pure` below the skill folder, each component
    opened relative to the one before and none through a link, so nothing swapped in
    between a check and the read can lead out of the folder. SkillError says why not."""
    if not pure.parts:
        raise SkillError("a path inside the skill folder is needed")
    try:
        fd = os.open(skill.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SkillError(f"{pure} cannot be read: {exc.strerror or 'unknown error'}") from None
    try:
        for depth, part in enumerate(pure.parts):
            last = depth == len(pure.parts) - 1
            shown = PurePosixPath(*pure.parts[: depth + 1])
            try:
                child = os.open(part, _NO_LINK | (0 if last else os.O_DIRECTORY), dir_fd=fd)
            except OSError as exc:
                raise _refusal(fd, part, shown, pure, skill, where, exc) from None
            os.close(fd)
            fd = child
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(f"{pure} does not exist in skill {skill.name} (it is not a file)")
        if info.st_size > limit:
            raise SkillError(f"{pure} is {info.st_size} bytes; at most {limit} can be read")
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(limit + 1)
        if len(data) > limit:
            raise SkillError(f"{pure} is over {limit} bytes; at most {limit} can be read")
        return data, info.st_mode
    except OSError as exc:
        raise SkillError(f"{pure} cannot be read: {exc.strerror or 'unknown error'}") from None
    finally:
        os.close(fd)


def _refusal(
    fd: int,
    part: str,
    shown: PurePosixPath,
    pure: PurePosixPath,
    skill: Skill,
    where: str,
    exc: OSError,
) -> SkillError:
    """Why opening the component `part` (the path `shown`) failed, for a person."""
    try:
        info = os.lstat(part, dir_fd=fd)
    except OSError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        it = "it" if shown == pure else str(shown)
        try:
            os.stat(part, dir_fd=fd)
        except OSError as target:
            if target.errno == errno.ELOOP:
                return SkillError(f"{pure} cannot be read: {it} is a symlink loop")
            broken = f"{it} is a broken link"
            return SkillError(f"{pure} does not exist in skill {skill.name} ({broken})")
        return SkillError(
            f"{shown} is a symlink, and lorebot follows no link in a skill: one can point "
            f"outside {where}; make it a real file or folder"
        )
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return SkillError(f"{pure} does not exist in skill {skill.name}")
    return SkillError(f"{pure} cannot be read: {exc.strerror or 'unknown error'}")
