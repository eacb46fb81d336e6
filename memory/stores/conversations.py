"""Conversations: each one's message history and its compactions, and the search over
past messages (those logged live and those imported from a platform's export)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory.policy.visibility import Visibility
    from memory.stores.vectors import VectorIndex


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A message to log: `author` is the person's scope ("" for lorebot)."""

    role: str
    content: str
    author: str = ""
    author_name: str = ""
    # The message as the model read it (with what was recalled for it), when that is not
    # `content`: the next turns send it as it was, so the model's cache of the prompt holds.
    prompt: str = ""


@dataclass(frozen=True, slots=True)
class PastMessage:
    """A message from another record of a conversation (a Slack or Discord export).

    `source_id` is its platform id (`slack/C0123/1700000000.000100`): stored once per
    `scope`, so importing it again changes nothing."""

    source_id: str
    conversation: str
    scope: str
    author: str
    author_name: str
    content: str
    created_at: datetime
    link: str = ""


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    id: int
    role: str
    author: str
    content: str
    prompt: str = ""  # as the model read it, when that is not `content`

    @property
    def as_read(self) -> str:
        """What the model read of this message."""
        return self.prompt or self.content


@dataclass(frozen=True, slots=True)
class LoggedMessage:
    conversation: str
    role: str
    author: str
    content: str
    created_at: str


@dataclass(frozen=True, slots=True)
class History:
    """What a prompt carries of the past: the latest summary and the turns after it."""

    summary: str
    entries: tuple[HistoryEntry, ...]


@dataclass(frozen=True, slots=True)
class MessageHit:
    """A past message found by a search, with its score (higher is better)."""

    id: int
    conversation: str
    scope: str
    role: str
    author_name: str
    content: str
    created_at: str
    link: str
    score: float


class ConversationLog(Protocol):
    """Per-conversation history and compactions, and the search over past messages.

    Messages are stored with credentials and the bot's configured secrets redacted, so
    neither reaches the history, its search index or backups."""

    async def append(
        self, conversation: str, entries: Sequence[LogEntry], *, scope: str = "", link: str = ""
    ) -> None:
        """Add messages to a conversation and to the message search, in one transaction.
        `scope` (the channel, or the person of a DM) decides who may search them; without
        one they are history only. `link` leads to the message on its platform."""
        ...

    async def import_messages(self, messages: Iterable[PastMessage]) -> int:
        """Add past messages in one transaction, redacted and searchable as live ones; a
        message whose source id is stored for its scope already is skipped. Returns how
        many were new; any exception while `messages` is read leaves nothing behind."""
        ...

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int = 5,
        vectors: VectorIndex | None = None,
        vector: Sequence[float] | None = None,
    ) -> list[MessageHit]:
        """Past messages matching `query` that the conversation may read, best first."""
        ...

    async def index_older_messages(self) -> int:
        """Index messages logged before message search existed; returns how many
        conversations had some."""
        ...

    async def fetch_history(self, conversation: str, limit: int = 60) -> History:
        """The latest summary and up to `limit` most recent messages after it, oldest first
        (imported history is recalled, not part of it)."""
        ...

    async def compact(self, conversation: str, up_to_message_id: int, summary: str) -> None:
        """Replace the history up to and including `up_to_message_id` by `summary`."""
        ...

    async def fetch_messages_between(self, start: datetime, end: datetime) -> list[LoggedMessage]:
        """Every message lorebot logged in [start, end), by conversation then time."""
        ...

    async def count_questions(
        self, conversation_prefix: str, start: datetime, end: datetime
    ) -> int:
        """People's messages to the model in conversations whose key starts with the prefix."""
        ...
