"""An event as the inbox keeps it: plain JSON, and back (`memory.inbox`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from adapters.base import ConversationRef, Event, Message, ReactionEvent, UserRef


def to_payload(event: Message | ReactionEvent) -> dict[str, Any]:
    """The event's fields, with its kind. Slash commands are never kept: their answer
    goes back through the connection that brought them."""
    kind = "reaction" if isinstance(event, ReactionEvent) else "message"
    return {"kind": kind, **asdict(event)}


def from_payload(payload: dict[str, Any]) -> Event:
    fields = dict(payload)
    kind = fields.pop("kind")
    fields["conversation"] = ConversationRef(**fields["conversation"])
    if kind == "reaction":
        return ReactionEvent(user=UserRef(**fields.pop("user")), **fields)
    return Message(author=UserRef(**fields.pop("author")), **fields)
