"""A skill folder read once into memory for a script run, with one hash over all of it.

The snapshot holds every folder and regular file of the skill (not `.git`), read without
following any link; symlinks and special files are left out and only named. Its hash
covers each entry's path, the mode it is staged with and its bytes, so a card that shows
the hash binds the whole set of files a run stages, not only the script it names.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skills.resources import ScriptFile
from skills.types import SkillError

MAX_COPY_BYTES = 64 * 1024 * 1024
MAX_SNAPSHOT_ENTRIES = 10_000
MAX_DEPTH = 32
# Never part of a run: a skill kept in git does not need its history to run.
NOT_COPIED = frozenset({".git"})
_NO_LINK = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One regular file of a snapshot, relative to the skill folder."""

    relative: str
    data: bytes
    executable: bool

    @property
    def mode(self) -> int:
        """The mode the file is staged with."""
        return 0o555 if self.executable else 0o444


@dataclass(frozen=True, slots=True)
class SkillSnapshot:
    """The skill folder as read once: what a run stages is exactly this."""

    folders: tuple[str, ...]  # each after the folder it is in
    files: tuple[SnapshotFile, ...]
    left_out: tuple[str, ...]  # symlinks and special files, never staged
    sha256: str

    @property
    def size(self) -> int:
        return sum(len(f.data) for f in self.files)

    def script(self, relative: str) -> ScriptFile | None:
        """The file `relative` of this snapshot as a script, or None when it holds none."""
        for file in self.files:
            if file.relative == relative:
                sha = hashlib.sha256(file.data).hexdigest()
                return ScriptFile(relative, file.data, sha, file.executable)
        return None


def manifest_hash(
    folders: tuple[str, ...], files: tuple[SnapshotFile, ...], left_out: tuple[str, ...]
) -> str:
    """SHA-256 over every entry's kind and path, and each file's staged mode and bytes."""
    entries = [["folder", path] for path in folders]
    for file in files:
        digest = hashlib.sha256(file.data).hexdigest()
        entries.append(["file", file.relative, oct(file.mode), digest])
    entries += [["left-out", path] for path in left_out]
    entries.sort(key=lambda entry: (entry[1], entry[0]))
    canonical = json.dumps(entries, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_snapshot(folder: Path, *, max_bytes: int = MAX_COPY_BYTES) -> SkillSnapshot:
    """Every folder and regular file below `folder`, read once and without following a
    link; SkillError when the folder cannot be read or is too large to run from."""
    reader = _Reader(max_bytes)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SkillError(f"the skill folder cannot be read: {exc.strerror or exc}") from None
    try:
        reader.walk(fd, PurePosixPath(), 0)
    finally:
        os.close(fd)
    folders, files, left_out = tuple(reader.folders), tuple(reader.files), tuple(reader.left_out)
    return SkillSnapshot(folders, files, left_out, manifest_hash(folders, files, left_out))


class _Reader:
    """One walk of a skill folder, by directory descriptors, within a budget."""

    def __init__(self, max_bytes: int) -> None:
        self.budget = max_bytes
        self.max_bytes = max_bytes
        self.entries = 0
        self.folders: list[str] = []
        self.files: list[SnapshotFile] = []
        self.left_out: list[str] = []

    def walk(self, fd: int, prefix: PurePosixPath, depth: int) -> None:
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            raise self._unreadable(prefix, exc) from None
        for entry in entries:
            if entry.name in NOT_COPIED:
                continue
            relative = prefix / entry.name
            self.entries += 1
            if self.entries > MAX_SNAPSHOT_ENTRIES:
                raise SkillError(
                    f"the skill folder holds over {MAX_SNAPSHOT_ENTRIES} files and folders, "
                    "too many to run its scripts"
                )
            try:
                if entry.is_dir(follow_symlinks=False):
                    self._folder(fd, entry.name, relative, depth + 1)
                elif entry.is_file(follow_symlinks=False):
                    self._file(fd, entry.name, relative)
                else:
                    self.left_out.append(relative.as_posix())
            except OSError as exc:
                raise self._unreadable(relative, exc) from None

    def _folder(self, fd: int, name: str, relative: PurePosixPath, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise SkillError(
                f"the skill folder is nested over {MAX_DEPTH} folders deep at {relative}, "
                "too deep to run its scripts"
            )
        child = os.open(name, _NO_LINK | os.O_DIRECTORY, dir_fd=fd)
        try:
            self.folders.append(relative.as_posix())
            self.walk(child, relative, depth)
        finally:
            os.close(child)

    def _file(self, fd: int, name: str, relative: PurePosixPath) -> None:
        child = os.open(name, _NO_LINK, dir_fd=fd)
        with os.fdopen(child, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):  # swapped since the listing
                self.left_out.append(relative.as_posix())
                return
            data = file.read(self.budget + 1)
        self.budget -= len(data)
        if self.budget < 0:
            raise SkillError(
                f"the skill folder is over {self.max_bytes // _MIB} MiB, "
                "too large to run its scripts"
            )
        executable = bool(info.st_mode & 0o111)
        self.files.append(SnapshotFile(relative.as_posix(), data, executable))

    def _unreadable(self, relative: PurePosixPath, exc: OSError) -> SkillError:
        where = f" at {relative}" if relative.parts else ""
        return SkillError(f"the skill folder cannot be read{where}: {exc.strerror or exc}")
