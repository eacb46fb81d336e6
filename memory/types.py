"""Value types of the memory store: scopes, notes, changes and search hits."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from memory.errors import InvalidInput
from memory.ranking import STOPWORDS
from memory.scope_ids import SCOPE_ID_MAX_CHARS, raw_id, scope_id

TOPIC_MAX_CHARS = 64
SUMMARY_MAX_CHARS = 200
_TOPIC_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SCOPE_RE = re.compile(
    r"^(user|channel|team):([a-z][a-z0-9_-]{0,31})/((?:[A-Za-z0-9_.@-]|%[0-9A-Fa-f]{2})+)$"
)


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
    """A note's owner, written `KIND:PLATFORM/ID`, e.g. `user:slack/U024BE7LH`; ID is the
    platform's id as `scope_id` writes it (`channel:matrix/%21room%3Amatrix.org`)."""

    kind: ScopeKind
    platform: str
    id: str

    @classmethod
    def parse(cls, text: str) -> Scope:
        """Parse `KIND:PLATFORM/ID`; raise `InvalidInput` naming the expected form."""
        match = _SCOPE_RE.match(text.strip())
        if match is None or set(match.group(3)) == {"."}:
            raise InvalidInput(
                f"invalid scope {text[:300]!r}: expected KIND:PLATFORM/ID with KIND one of "
                "user, channel, team (for example channel:slack/C0123 or user:console/alice), "
                "and characters of ID other than letters, digits and _.@- written as %XX"
            )
        found = match.group(3)
        # One spelling per id: scopes are compared as text in SQL.
        canonical = scope_id(raw_id(found)) if "%" in found else found
        if len(canonical) > SCOPE_ID_MAX_CHARS:
            raise InvalidInput(
                f"invalid scope {text[:60]!r}…: its ID has {len(canonical)} characters, "
                f"at most {SCOPE_ID_MAX_CHARS}"
            )
        return cls(ScopeKind(match.group(1)), match.group(2), canonical)

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


# Words that name nothing on their own: a topic of only these (and numbers) would be
# shared by unrelated notes, so it is never made from them.
GENERIC_WORDS = STOPWORDS | {"note", "notes", "remember", "something", "stuff", "thing", "things"}
_APOSTROPHE_IN_WORD = re.compile(r"(?<=\w)['’](?=\w)")
# Latin letters that Unicode does not decompose into a base letter and a mark.
_LATIN_LETTERS = str.maketrans(
    {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "đ": "d", "ð": "d", "ł": "l", "þ": "th", "ı": "i"}
)


def slug_words(text: str) -> list[str]:
    """The words of `text` as a topic spells them: lowercase ASCII letters and digits,
    accents dropped (`café` -> `cafe`), apostrophes inside words removed (`Zoë's` -> `zoes`)."""
    joined = _APOSTROPHE_IN_WORD.sub("", text).lower().translate(_LATIN_LETTERS)
    decomposed = unicodedata.normalize("NFKD", joined)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return re.findall(r"[a-z0-9]+", bare)


def is_generic(words: list[str]) -> bool:
    """Whether `words` name nothing: none at all, or only generic words and numbers."""
    return all(word in GENERIC_WORDS or word.isdigit() for word in words)


def hashed_topic(text: str) -> str:
    """A topic for text that has no usable words (another script, only numbers): `note-`
    and a short hash of the text, the same for the same text."""
    import hashlib  # loaded here: most commands never hash a topic

    digest = hashlib.sha256(" ".join(text.split()).encode("utf-8", "replace")).hexdigest()
    return f"note-{digest[:6]}"


def slugify(text: str, max_chars: int = TOPIC_MAX_CHARS) -> str:
    """Turn free text into a topic slug: `"Staging DB!"` -> `"staging-db"`. Text whose words
    are all generic (`note`, `it`, `1`) or not Latin gets `hashed_topic`."""
    slug = ""
    for word in slug_words(text):
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_chars:
            break
        slug = candidate
    if slug and not is_generic(slug.split("-")):
        return slug
    return hashed_topic(text)


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
    """One confirmed change: to one note, with the state before and after, or to many (an
    import, or the revert of one), with no scope or topic of its own and `notes` counting
    them. Read as one scope's history, a change of many notes has that `scope` and counts
    only that scope's notes; as one note's history, that note's `topic` and `before`."""

    id: int
    scope: Scope | None
    topic: str | None
    action: str
    before: dict[str, object] | None
    after: dict[str, object] | None
    actor: str
    reason: str
    proposal_id: int | None
    created_at: datetime
    reverted_by: int | None
    notes: int | None = None  # a change of many notes: how many (None: a change of one)


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
