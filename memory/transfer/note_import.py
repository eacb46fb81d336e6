"""Import of notes from JSON Lines or an export folder (`memory.transfer.note_export` writes
one), read and validated before anything is written, then stored all or nothing.

Files must be UTF-8: other bytes are an error naming the line, since they mean the file
is in another encoding and replacing them would garble every accented letter. A lone
surrogate escape (`\\ud800` in JSON or YAML, e.g. from a cut emoji) becomes U+FFFD.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from memory.errors import InvalidInput
from memory.stores.notes import ImportResult, NoteStore
from memory.types import Category, NoteDraft, Scope, parse_category, validate_topic

# The line an exported note file starts with, opening its YAML front matter.
FRONT_MATTER = "---\n"


async def import_notes(
    store: NoteStore,
    path: Path,
    *,
    actor: str,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Import a JSON Lines file or an export folder into `store`, all or nothing;
    `progress(written, total)` follows the writing."""
    located = read_source(path)
    return await store.import_drafts(
        [item.draft for item in located],
        actor=actor,
        labels=[item.where for item in located],
        progress=progress,
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
        return _scope_text(value)

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
            scope=_parsed_scope(self.scope),
            topic=self.topic,
            summary=self.summary,
            body=self.body,
            category=_CATEGORIES[self.category],
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
        drafts.append(Located(where, _parsed_line(line, where)))
    return drafts


def _parsed_line(line: str, where: str) -> NoteDraft:
    """One line's note. pydantic reads a good line in one step; any line it refuses is
    read again with the stdlib, which takes a lone surrogate escape and says more."""
    try:
        return ImportedNote.model_validate_json(line).to_draft()
    except ValidationError:
        return _validated(_json_object(line, where), where)


@functools.lru_cache(maxsize=4096)
def _parsed_scope(text: str) -> Scope:
    """`Scope.parse`, once per scope: an import has many notes of each."""
    return Scope.parse(text)


@functools.lru_cache(maxsize=4096)
def _scope_text(text: str) -> str:
    """The scope `text` names, written as lorebot writes it."""
    return str(_parsed_scope(text))


_CATEGORIES = {category.value: category for category in Category}


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
    if not text.startswith(FRONT_MATTER):
        raise InvalidInput(f"{path}: expected YAML front matter starting with ---")
    end = text.find("\n---\n", len(FRONT_MATTER) - 1)
    if end < 0:
        raise InvalidInput(f"{path}: the front matter is not closed with ---")
    try:
        meta = _front_matter(text[len(FRONT_MATTER) : end + 1])
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


_FAST_YAML: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)
# What libyaml reads differently from PyYAML in some texts (a tab, a BOM, other line
# breaks, tags, block scalars, flow collections), found by comparing the two on random
# YAML: front matter holding any of it is read by PyYAML alone.
_YAML_DIFFERS = re.compile(
    r"[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
    r"|[\u2028\u2029!|>\[{]"
)


def _front_matter(text: str) -> Any:
    """The front matter's YAML, read by libyaml when it is there (several times faster)
    and the text is one both read alike; a text libyaml refuses is read again by PyYAML,
    whose errors say more."""
    if _FAST_YAML is not None and _YAML_DIFFERS.search(text) is None:
        try:
            return yaml.load(text, Loader=_FAST_YAML)
        except Exception:  # any refusal: the reader below decides what to say
            pass
    return yaml.safe_load(text)


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
