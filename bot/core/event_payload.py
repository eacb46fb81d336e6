"""An event as the core takes it, credentials redacted, and as the inbox keeps it: plain
JSON, and back (`memory.stores.inbox`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from adapters.base import ButtonClick, ConversationRef, Message, ReactionEvent, UserRef
from memory.policy.redaction import redact

E = TypeVar("E", bound=Message | ReactionEvent | ButtonClick)


def redacted(event: E, known: Sequence[str] = ()) -> E:
    """`event` with every credential in its text, and every `known` secret value (lorebot's
    own), replaced by `[REDACTED]`, as the history keeps the message: the inbox's table
    (and so the database file and its backups), recall's searches, the model and the logs
    get it so, as every later turn does. The same event when there was nothing to redact."""
    if not isinstance(event, Message):
        return event
    text = redact(event.text, known)
    return event if text == event.text else dataclasses.replace(event, text=text)


def to_payload(event: Message | ReactionEvent, known: Sequence[str] = ()) -> dict[str, Any]:
    """The event's fields, with its kind, `redacted`. Slash commands are never kept: their
    answer goes back through the connection that brought them."""
    kind = "reaction" if isinstance(event, ReactionEvent) else "message"
    return {"kind": kind, **dataclasses.asdict(redacted(event, known))}


def from_payload(payload: dict[str, Any]) -> Message | ReactionEvent:
    fields = dict(payload)
    kind = fields.pop("kind")
    fields["conversation"] = ConversationRef(**fields["conversation"])
    if kind == "reaction":
        return ReactionEvent(user=UserRef(**fields.pop("user")), **fields)
    return Message(author=UserRef(**fields.pop("author")), **fields)
