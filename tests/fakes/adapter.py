"""A recording adapter that runs the real core: what the bot posted, edited and reacted."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from adapters.base import (
    THINKING,
    Button,
    ButtonClick,
    ConversationRef,
    DeliveryError,
    EventSink,
    Message,
    PostedMessage,
    ReactionEvent,
    SlashCommand,
    Status,
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
    buttons: list[Button] = field(default_factory=list)  # taken away by an edit

    @property
    def current(self) -> str:
        return self.edits[-1] if self.edits else self.text

    def button(self, label: str) -> Button:
        return next(b for b in self.buttons if b.label == label)


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
        sent = self._find(posted.message_id)
        sent.edits.append(text)
        sent.buttons = []

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

    def slash(
        self, text: str, *, user: str = "UALICE", channel: str = "C1", dm: bool = False
    ) -> tuple[SlashCommand, list[str]]:
        """`/lorebot <text>` typed by `user`, and the list its private answers land in."""
        answers: list[str] = []

        async def answer(reply: str) -> None:
            answers.append(reply)

        conversation = ConversationRef(
            PLATFORM, f"D-{user}" if dm else channel, is_dm=dm, team_id=TEAM
        )
        event_id = f"cmd-{uuid.uuid4().hex[:8]}"
        author = UserRef(PLATFORM, user, user.lower())
        command = SlashCommand(
            conversation, author, text, "", event_id, mentions_bot=True, answer=answer
        )
        return command, answers

    def reaction(self, card: Sent, emoji: str, *, user: str = "UALICE") -> ReactionEvent:
        event_id = f"re-{uuid.uuid4().hex[:8]}"
        return ReactionEvent(
            card.conversation,
            UserRef(PLATFORM, user, user.lower()),
            emoji,
            card.message_id,
            event_id,
        )


class ButtonsAdapter(RecordingAdapter):
    """A recording adapter that puts buttons under cards, and lets a test click them; what
    it shows one person alone, outside a click's answer, lands in `private`."""

    shows_buttons = True

    def __init__(self, max_message_chars: int = 2000) -> None:
        super().__init__(max_message_chars)
        self.private: list[tuple[str, str, str]] = []

    async def send_card(
        self, conversation: ConversationRef, text: str, buttons: Sequence[Button]
    ) -> PostedMessage:
        posted = await self.send(conversation, text)
        self._find(posted.message_id).buttons = list(buttons)
        return posted

    async def direct_conversation(self, user_id: str) -> ConversationRef:
        return ConversationRef(PLATFORM, f"D-{user_id}", is_dm=True, team_id=TEAM)

    async def answer_privately(
        self, conversation: ConversationRef, user_id: str, text: str
    ) -> None:
        self.private.append((conversation.channel_id, user_id, text))

    def click(
        self,
        card: Sent,
        label: str = "Approve",
        *,
        user: str = "UALICE",
        value: str | None = None,
        is_bot: bool = False,
    ) -> tuple[ButtonClick, list[str]]:
        """A click by `user` on the card's button `label` (or one carrying `value`), and
        the list the answers only they see land in."""
        answers: list[str] = []

        async def answer(reply: str) -> None:
            answers.append(reply)

        click = ButtonClick(
            conversation=card.conversation,
            user=UserRef(PLATFORM, user, user.lower(), is_bot=is_bot),
            value=card.button(label).value if value is None else value,
            message_id=card.message_id,
            event_id=f"click-{uuid.uuid4().hex[:8]}",
            answer=answer,
        )
        return click, answers


class _RecordedStream:
    """A reply stream of the streaming adapter: each `show` and `finish`, as a platform
    would get them."""

    def __init__(self, adapter: StreamingAdapter, conversation: ConversationRef) -> None:
        self.adapter = adapter
        self.conversation = conversation
        self.calls: list[tuple[str, str]] = []
        self._posted: PostedMessage | None = None

    @property
    def posted(self) -> PostedMessage | None:
        return self._posted

    async def show(self, text: str) -> None:
        await self.adapter.before_show(len(self.calls))
        self.calls.append(("show", text))
        if self._posted is None:
            self._posted = await self.adapter.send(self.conversation, text)
        else:
            await self.adapter.edit(self._posted, text)

    async def finish(self, text: str) -> PostedMessage:
        self.calls.append(("finish", text))
        if self._posted is None:
            self._posted = await self.adapter.send(self.conversation, text)
        elif text != self.adapter._find(self._posted.message_id).current:
            await self.adapter.edit(self._posted, text)
        return self._posted


class StreamingAdapter(RecordingAdapter):
    """A recording adapter whose replies grow while the model writes them (every update
    shown: no pacing), as Discord's edits do. `hold_after(n)` makes updates after the
    n-th wait, as a platform that stopped answering, until `release` is set."""

    stream_interval_s = 0.0

    def __init__(self, max_message_chars: int = 2000) -> None:
        super().__init__(max_message_chars)
        self.streams: list[_RecordedStream] = []
        self.statuses: list[str] = []
        self.fail_edits = 0
        self._hold_after: int | None = None
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    def stream_reply(self, conversation: ConversationRef, recipient: UserRef) -> _RecordedStream:
        stream = _RecordedStream(self, conversation)
        self.streams.append(stream)
        return stream

    @contextlib.asynccontextmanager
    async def working(self, conversation: ConversationRef) -> AsyncIterator[Status]:
        self.statuses.append(THINKING)

        async def status(text: str) -> None:
            if self.statuses[-1] != text:  # a status line shows changes
                self.statuses.append(text)

        yield status
        self.statuses.append("")  # the indicator ended

    async def edit(self, posted: PostedMessage, text: str) -> None:
        if self.fail_edits:
            self.fail_edits -= 1
            raise DeliveryError("the platform refused the edit")
        await super().edit(posted, text)

    def hold_after(self, shows: int) -> None:
        self._hold_after = shows

    async def before_show(self, shown: int) -> None:
        if self._hold_after is not None and shown >= self._hold_after:
            self.held.set()
            await self.release.wait()
