"""Import and export of notes: JSON Lines in, readable Markdown folders out and in.

An export folder holds, per scope, `KIND/PLATFORM/ID/index.md` and one `TOPIC.md` per
note with YAML front matter; importing it reproduces the notes.

Files must be UTF-8: other bytes are an error naming the line, since they mean the file
is in another encoding and replacing them would garble every accented letter. A lone
surrogate escape (`\\ud800` in JSON or YAML, e.g. from a cut emoji) becomes U+FFFD.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from memory.db import to_db_time
from memory.errors import InvalidInput
from memory.store import ImportResult, NoteStore
from memory.types import Category, Note, NoteDraft, Scope, parse_category, validate_topic

_FRONT_MATTER = "---\n"


async def import_notes(store: NoteStore, path: Path, *, actor: str) -> ImportResult:
    """Import a JSON Lines file or an export folder into `store`, all or nothing."""
    located = read_source(path)
    return await store.import_drafts(
        [item.draft for item in located], actor=actor, labels=[item.where for item in located]
    )


class ImportedNote(BaseModel):
    """One note as it crosses the import boundary."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: str
    topic: str
    summary: str
    body: str = ""
    category: str = Category.FACT.value
    private: bool = False
    pinned: bool = False
    author: str = ""
    source: str = ""
    expires_at: datetime | None = None

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str) -> str:
        return str(Scope.parse(value))

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        return validate_topic(value)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return parse_category(value).value

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("expires_at needs a timezone, for example 2027-01-01T00:00:00Z")
        return value

    def to_draft(self) -> NoteDraft:
        return NoteDraft(
            scope=Scope.parse(self.scope),
            topic=self.topic,
            summary=self.summary,
            body=self.body,
            category=Category(self.category),
            private=self.private,
            pinned=self.pinned,
            author=self.author,
            source=self.source,
            expires_at=self.expires_at,
        )


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a high-low pair joined), so
    it can be stored as UTF-8."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _valid_strings(data: dict[Any, Any]) -> dict[Any, Any]:
    """A parsed note with lone surrogates replaced in its keys and text values."""
    return {
        _valid_text(key) if isinstance(key, str) else key: (
            _valid_text(value) if isinstance(value, str) else value
        )
        for key, value in data.items()
    }


def _validated(data: dict[Any, Any], where: str) -> NoteDraft:
    try:
        return ImportedNote.model_validate(_valid_strings(data)).to_draft()
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"]) or "note"
        message = str(error["msg"]).removeprefix("Value error, ")
        raise InvalidInput(f"{where}: field {field!r}: {message}") from None


@dataclass(frozen=True, slots=True)
class Located:
    """A parsed note and where it came from, for error messages."""

    where: str
    draft: NoteDraft


def parse_jsonl(text: str, source: str) -> list[Located]:
    """Parse JSON Lines of notes; the first bad line raises, naming the line and field."""
    drafts = []
    # Only "\n" ends a line: JSON strings may hold U+2028 and other breaks `splitlines` cuts at.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        drafts.append(Located(where, _validated(_json_object(line, where), where)))
    return drafts


def _json_object(line: str, where: str) -> dict[Any, Any]:
    """One line's JSON object; anything else is an `InvalidInput` naming `where`."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}: not valid JSON: {exc.msg}") from None
    except ValueError:  # only the limit on digits in an integer
        raise InvalidInput(
            f"{where}: a number has more than {sys.get_int_max_str_digits()} digits"
        ) from None
    except RecursionError:
        raise InvalidInput(f"{where}: the JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: expected a JSON object with scope, topic, summary")
    return data


def parse_note_file(path: Path, scope: Scope) -> NoteDraft:
    """Parse one exported `TOPIC.md` file of `scope`."""
    text = _read_utf8(path)
    if not text.startswith(_FRONT_MATTER):
        raise InvalidInput(f"{path}: expected YAML front matter starting with ---")
    end = text.find("\n---\n", len(_FRONT_MATTER) - 1)
    if end < 0:
        raise InvalidInput(f"{path}: the front matter is not closed with ---")
    try:
        meta = yaml.safe_load(text[len(_FRONT_MATTER) : end + 1])
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}: front matter is not valid YAML: {exc}") from None
    except ValueError:  # only the limit on digits in an integer
        raise InvalidInput(
            f"{path}: a number in the front matter has more than "
            f"{sys.get_int_max_str_digits()} digits"
        ) from None
    except RecursionError:
        raise InvalidInput(f"{path}: the front matter is nested too deeply") from None
    if not isinstance(meta, dict):
        raise InvalidInput(f"{path}: front matter must be a mapping")
    meta.setdefault("topic", path.stem)
    for informational in ("created", "updated"):
        meta.pop(informational, None)
    return _validated({**meta, "scope": str(scope), "body": text[end + 5 :]}, str(path))


def read_source(path: Path) -> list[Located]:
    """Read notes from a JSON Lines file or an export folder."""
    if path.is_dir():
        return _read_folder(path)
    return parse_jsonl(_read_utf8(path), str(path))


def _read_utf8(path: Path) -> str:
    """The text of `path`; bytes that are not UTF-8 are an error naming their line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist") from None
    except OSError as exc:
        raise InvalidInput(f"{path} cannot be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(
            f"{path} line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
            "convert the file to UTF-8 and import it again"
        ) from None


def _read_folder(root: Path) -> list[Located]:
    drafts = []
    for path in sorted(root.glob("*/*/*/*.md")):
        if path.name == "index.md":
            continue
        kind, platform, scope_id = path.relative_to(root).parts[:3]
        try:
            scope = Scope.parse(f"{kind}:{platform}/{scope_id}")
        except InvalidInput as exc:
            raise InvalidInput(f"{path}: folder does not name a scope: {exc}") from None
        drafts.append(Located(str(path), parse_note_file(path, scope)))
    if not drafts:
        raise InvalidInput(f"{root} holds no notes (expected KIND/PLATFORM/ID/TOPIC.md files)")
    return drafts


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
        "created": to_db_time(note.created_at),
        "updated": to_db_time(note.updated_at),
        "expires_at": None if note.expires_at is None else to_db_time(note.expires_at),
    }
    # created/updated are for the reader; import sets its own times.
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"{_FRONT_MATTER}{front}---\n{note.body}"


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
