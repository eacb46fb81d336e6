"""A recording adapter that runs the real core: what the bot posted, edited and reacted."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field

from adapters.base import (
    ConversationRef,
    EventSink,
    Message,
    PostedMessage,
    ReactionEvent,
    UserRef,
)

PLATFORM = "test"
TEAM = "T1"


@dataclass
class Sent:
    conversation: ConversationRef
    text: str
    message_id: str
    edits: list[str] = field(default_factory=list)
    reactions: list[str] = field(default_factory=list)

    @property
    def current(self) -> str:
        return self.edits[-1] if self.edits else self.text


class RecordingAdapter:
    """Implements the adapter contract in memory and lets a test inject events."""

    platform = PLATFORM

    def __init__(self, max_message_chars: int = 2000) -> None:
        self.max_message_chars = max_message_chars
        self.connected = False
        self.sent: list[Sent] = []
        self.sink: EventSink | None = None
        self.closed = 0
        self.fail_sends = 0
        self._ids = itertools.count(1)

    async def start(self, sink: EventSink) -> None:
        self.sink = sink
        self.connected = True

    async def close(self) -> None:
        self.closed += 1
        self.connected = False

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        if self.fail_sends:
            self.fail_sends -= 1
            raise RuntimeError("the platform rejected the message")
        message_id = f"m-{uuid.uuid4().hex[:8]}"
        self.sent.append(Sent(conversation, text, message_id))
        return PostedMessage(conversation, message_id)

    def _find(self, message_id: str) -> Sent:
        return next(s for s in self.sent if s.message_id == message_id)

    async def edit(self, posted: PostedMessage, text: str) -> None:
        self._find(posted.message_id).edits.append(text)

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        self._find(posted.message_id).reactions.append(emoji)

    # --- test helpers ---------------------------------------------------------------

    @property
    def cards(self) -> list[Sent]:
        return [s for s in self.sent if s.reactions]

    @property
    def replies(self) -> list[str]:
        return [s.text for s in self.sent if not s.reactions]

    def message(
        self,
        text: str,
        *,
        user: str = "UALICE",
        channel: str = "C1",
        dm: bool = False,
        event_id: str | None = None,
        is_bot: bool = False,
    ) -> Message:
        conversation = ConversationRef(
            PLATFORM, f"D-{user}" if dm else channel, is_dm=dm, team_id=TEAM
        )
        event_id = event_id or f"ev-{next(self._ids)}-{uuid.uuid4().hex[:6]}"
        author = UserRef(PLATFORM, user, user.lower(), is_bot=is_bot)
        return Message(conversation, author, text, event_id, event_id, mentions_bot=True)

    def reaction(self, card: Sent, emoji: str, *, user: str = "UALICE") -> ReactionEvent:
        event_id = f"re-{uuid.uuid4().hex[:8]}"
        return ReactionEvent(
            card.conversation, UserRef(PLATFORM, user, user.lower()), emoji, card.message_id,
            event_id,
        )  # fmt: skip
