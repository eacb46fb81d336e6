"""Value types of the memory store: scopes, notes, changes and search hits."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from memory.errors import InvalidInput

TOPIC_MAX_CHARS = 64
SUMMARY_MAX_CHARS = 200
_TOPIC_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SCOPE_RE = re.compile(r"^(user|channel|team):([a-z][a-z0-9_-]{0,31})/([A-Za-z0-9_.@-]{1,128})$")


class ScopeKind(StrEnum):
    """Who a note belongs to: one person, one conversation, or one workspace/guild."""

    USER = "user"
    CHANNEL = "channel"
    TEAM = "team"


class Category(StrEnum):
    """What kind of knowledge a note holds."""

    FACT = "fact"
    PREFERENCE = "preference"
    CONVENTION = "convention"
    DECISION = "decision"
    PATTERN = "pattern"
    REFLECTION = "reflection"


@dataclass(frozen=True, slots=True, order=True)
class Scope:
    """A note's owner, written `KIND:PLATFORM/ID`, e.g. `user:slack/U024BE7LH`."""

    kind: ScopeKind
    platform: str
    id: str

    @classmethod
    def parse(cls, text: str) -> Scope:
        """Parse `KIND:PLATFORM/ID`; raise `InvalidInput` naming the expected form."""
        match = _SCOPE_RE.match(text.strip())
        if match is None or set(match.group(3)) == {"."}:
            raise InvalidInput(
                f"invalid scope {text!r}: expected KIND:PLATFORM/ID with KIND one of "
                "user, channel, team (for example channel:slack/C0123 or user:console/alice)"
            )
        return cls(ScopeKind(match.group(1)), match.group(2), match.group(3))

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.platform}/{self.id}"


def index_line(topic: str, summary: str) -> str:
    """A note's line in its scope's index."""
    return f"- {topic}: {summary}"


def validate_topic(topic: str) -> str:
    """Return `topic` if it is a lowercase kebab-case slug of at most 64 characters."""
    if len(topic) > TOPIC_MAX_CHARS or not _TOPIC_RE.match(topic):
        raise InvalidInput(
            f"invalid topic {topic!r}: use lowercase letters, digits and single hyphens, "
            f"at most {TOPIC_MAX_CHARS} characters (for example staging-db)"
        )
    return topic


def slugify(text: str, max_chars: int = TOPIC_MAX_CHARS) -> str:
    """Turn free text into a topic slug: `"Staging DB!"` -> `"staging-db"`."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_chars:
            break
        slug = candidate
    return slug or "note"


def parse_category(value: str) -> Category:
    """Parse a category name; raise `InvalidInput` listing the valid ones."""
    try:
        return Category(value.strip().lower())
    except ValueError:
        valid = ", ".join(c.value for c in Category)
        raise InvalidInput(f"unknown category {value!r}: use one of {valid}") from None


@dataclass(frozen=True, slots=True)
class NoteDraft:
    """The content of a note a person or the model wants to save."""

    scope: Scope
    topic: str
    summary: str
    body: str = ""
    category: Category = Category.FACT
    private: bool = False
    pinned: bool = False
    author: str = ""
    source: str = ""
    confidence: float = 1.0
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """A stored note."""

    id: int
    scope: Scope
    topic: str
    summary: str
    body: str
    category: Category
    private: bool
    pinned: bool
    author: str
    source: str
    confidence: float
    created_at: datetime
    updated_at: datetime
    access_count: int
    last_access: datetime | None
    expires_at: datetime | None

    @property
    def index_line(self) -> str:
        """The note's line in its scope's index."""
        return index_line(self.topic, self.summary)


@dataclass(frozen=True, slots=True)
class Change:
    """One confirmed change to one note, with the state before and after."""

    id: int
    scope: Scope
    topic: str
    action: str
    before: dict[str, object] | None
    after: dict[str, object] | None
    actor: str
    reason: str
    proposal_id: int | None
    created_at: datetime
    reverted_by: int | None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One recall result; `score` says how relevant, higher is better (-bm25 when found by
    words alone, the fused score when vectors took part)."""

    note: Note
    score: float
    snippet: str


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What a save did, for the reply to the person."""

    note: Note
    change_id: int | None
    created: bool
    left_index: tuple[str, ...]
    in_index: bool
