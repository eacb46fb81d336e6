"""Export of notes into a readable Markdown folder that imports back as the same notes.

An export folder holds, per scope, `KIND/PLATFORM/ID/index.md` and one `TOPIC.md` per
note with YAML front matter; importing it (`memory.transfer.note_import`) reproduces the notes.
Exporting again into the same folder removes the files of notes forgotten since, so an
import never brings them back; files an export did not write are never touched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from memory.clock import to_utc_text
from memory.errors import InvalidInput
from memory.transfer.note_import import FRONT_MATTER, parse_note_file
from memory.types import Note, Scope


def scope_dir(root: Path, scope: Scope) -> Path:
    return root / scope.kind.value / scope.platform / scope.id


def render_note_file(note: Note) -> str:
    meta = {
        "topic": note.topic,
        "summary": note.summary,
        "category": note.category.value,
        "private": note.private,
        "pinned": note.pinned,
        "author": note.author,
        "source": note.source,
        "created": to_utc_text(note.created_at),
        "updated": to_utc_text(note.updated_at),
        "expires_at": None if note.expires_at is None else to_utc_text(note.expires_at),
    }
    # created/updated are for the reader; import sets its own times.
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"{FRONT_MATTER}{front}---\n{note.body}"


def export_notes(notes: list[Note], root: Path) -> int:
    """Write `notes` under `root` as readable Markdown; return how many files were written."""
    by_scope: dict[Scope, list[Note]] = {}
    for note in notes:
        by_scope.setdefault(note.scope, []).append(note)
    for scope, scope_notes in by_scope.items():
        folder = scope_dir(root, scope)
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"# {scope}", ""]
        for note in sorted(scope_notes, key=lambda n: n.topic):
            lines.append(f"- [{note.topic}]({note.topic}.md): {note.summary}")
            (folder / f"{note.topic}.md").write_text(render_note_file(note), encoding="utf-8")
        (folder / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(notes)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export into a folder did: notes written, files of forgotten notes removed."""

    written: int
    removed: int


@dataclass(slots=True)
class _Survey:
    """The files already in an export folder: lorebot's own, by scope, and any others."""

    notes: list[tuple[Path, Scope, str]]
    indexes: list[tuple[Path, Scope]]
    foreign: list[Path]


def export_folder(
    notes: list[Note], root: Path, *, only: Scope | None = None, force: bool = False
) -> ExportResult:
    """Write `notes` under `root` so that importing the folder gives these notes back and
    no others: files an earlier export wrote for notes since forgotten are removed (only
    in `only`'s folder when given). Files an export did not write are never touched, and
    their presence is refused unless `force`."""
    survey = _survey(root)
    if survey.foreign and not force:
        count = len(survey.foreign)
        what = "a file" if count == 1 else f"{count} files"
        raise InvalidInput(
            f"{root} holds {what} that lorebot's export did not write "
            f"({survey.foreign[0].relative_to(root)}): export into an empty folder or an "
            "earlier export, or pass --force to write beside them"
        )
    root.mkdir(parents=True, exist_ok=True)
    written = export_notes(notes, root)
    return ExportResult(written, _remove_stale(root, survey, notes, only))


def _survey(root: Path) -> _Survey:
    """Sort the visible files under `root` into lorebot's export files and others."""
    survey = _Survey([], [], [])
    if not root.is_dir():
        return survey
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                _sort_file(root, Path(folder) / name, survey)
    return survey


def _sort_file(root: Path, path: Path, survey: _Survey) -> None:
    parts = path.relative_to(root).parts
    scope = _scope_of(parts) if path.suffix == ".md" and not path.is_symlink() else None
    if scope is None:
        survey.foreign.append(path)
    elif path.name == "index.md" and _first_line(path) == f"# {scope}":
        survey.indexes.append((path, scope))
    elif path.name == "index.md":
        survey.foreign.append(path)
    elif (topic := _exported_topic(path, scope)) is not None:
        survey.notes.append((path, scope, topic))
    else:
        survey.foreign.append(path)


def _scope_of(parts: tuple[str, ...]) -> Scope | None:
    """The scope whose export folder holds a file at `parts`, or None."""
    if len(parts) != 4:
        return None
    try:
        scope = Scope.parse(f"{parts[0]}:{parts[1]}/{parts[2]}")
    except InvalidInput:
        return None
    return scope if (scope.kind.value, scope.platform, scope.id) == parts[:3] else None


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as file:
        return file.readline().rstrip("\n")


def _exported_topic(path: Path, scope: Scope) -> str | None:
    """The topic of a note file as export writes it (`TOPIC.md`), or None for another file."""
    try:
        draft = parse_note_file(path, scope)
    except InvalidInput:
        return None
    return draft.topic if draft.topic == path.stem else None


def _remove_stale(root: Path, survey: _Survey, notes: list[Note], only: Scope | None) -> int:
    """Remove the export files of `survey` whose notes are not in `notes`; how many notes."""
    kept = {(note.scope, note.topic) for note in notes}
    scopes = {note.scope for note in notes}
    stale = [
        path
        for path, scope, topic in survey.notes
        if only in (None, scope) and (scope, topic) not in kept
    ]
    indexes = [
        path for path, scope in survey.indexes if only in (None, scope) and scope not in scopes
    ]
    for path in stale + indexes:
        path.unlink()
    for folder in sorted({path.parent for path in stale + indexes}):
        _remove_empty_folders(root, folder)
    return len(stale)


def _remove_empty_folders(root: Path, folder: Path) -> None:
    """Remove `folder` and its parents below `root` while they are empty."""
    while folder != root and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
