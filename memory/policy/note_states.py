"""A note's state as change sets keep it, on every engine: the columns, their JSON form
(times as fixed-width UTC text, flags as 0 or 1), what counts as its content, and the
fingerprint a card is checked against. Two engines holding the same state write the same
change set, so a database copied from one to the other keeps its history as it was."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memory.clock import to_utc_text
from memory.policy.storable import storable_json, storable_text

if TYPE_CHECKING:
    from memory.types import NoteDraft

# The columns a change set records; restoring them restores the note exactly.
STATE_COLUMNS = (
    "summary",
    "body",
    "category",
    "private",
    "pinned",
    "author",
    "source",
    "confidence",
    "created_at",
    "updated_at",
    "expires_at",
)
# What counts as the note's content when checking that a revert still applies.
CONTENT_COLUMNS = ("summary", "body", "category", "private", "pinned", "expires_at")
TIME_COLUMNS = ("created_at", "updated_at", "expires_at")
FLAG_COLUMNS = ("private", "pinned")


def same_content(a: Mapping[str, object] | None, b: Mapping[str, object] | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(a.get(c) == b.get(c) for c in CONTENT_COLUMNS)


def content_fingerprint(state: Mapping[str, object] | None) -> str | None:
    """A short hash of a note's content, so a card can be checked against the note later;
    None for a note that does not exist."""
    if state is None:
        return None
    content = json.dumps([state.get(c) for c in CONTENT_COLUMNS], ensure_ascii=False)
    return hashlib.sha256(content.encode()).hexdigest()[:24]


def dump_state(state: Mapping[str, object] | None) -> str | None:
    """The state as a change set keeps it, its text as the note's own (`memory.policy.storable`).
    Keys keep STATE_COLUMNS order; compact separators keep change sets small."""
    return None if state is None else storable_json(state, ensure_ascii=False, compact=True)


def load_state(text: str | None) -> dict[str, object] | None:
    return None if text is None else dict(json.loads(text))


def state_after(
    draft: NoteDraft, before: Mapping[str, object] | None, actor: str, now: str
) -> dict[str, object]:
    """The state a save of `draft` at `now` (UTC text) leaves, keeping the creation time
    of `before`; its text as stored, so a draft saved again compares unchanged."""
    return {
        "summary": storable_text(draft.summary),
        "body": storable_text(draft.body),
        "category": draft.category.value,
        "private": int(draft.private),
        "pinned": int(draft.pinned),
        "author": storable_text(draft.author or actor),
        "source": storable_text(draft.source),
        "confidence": draft.confidence,
        "created_at": now if before is None else before["created_at"],
        "updated_at": now,
        "expires_at": None if draft.expires_at is None else to_utc_text(draft.expires_at),
    }
