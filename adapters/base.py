"""The adapter contract: platform-neutral values and the interface every chat platform implements.

An adapter turns its platform's events into these values at the edge and hands them to an
event sink; the core answers through the adapter's small async interface. Nothing here
knows Slack, Discord or prompts.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from adapters.errors import AdapterConfigError as AdapterConfigError
from adapters.errors import AdapterError as AdapterError
from adapters.errors import DeliveryError as DeliveryError

APPROVE = "✅"
REJECT = "❌"
# An admin's "approve, and allow this tool here from now on" (♾️ without its variation
# selector, as Discord reports it).
ALWAYS = "\u267e"


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone UTF-16 surrogate replaced by U+FFFD (a high-low pair becomes
    its character), so it encodes as UTF-8 everywhere: SQLite, logs, HTTP bodies.

    Lone surrogates reach Python from JSON escapes such as `\\ud800` and from bytes that
    are not UTF-8 decoded with `surrogateescape` (piped stdin)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _make_valid(value: Any) -> None:
    """Replace lone surrogates in every text field of a frozen value, at construction."""
    for field in fields(value):
        text = getattr(value, field.name)
        if isinstance(text, str) and not text.isascii():
            object.__setattr__(value, field.name, valid_text(text))


@dataclass(frozen=True, slots=True)
class UserRef:
    """A person (or bot) on one platform."""

    platform: str
    id: str
    name: str = ""
    is_bot: bool = False

    def __post_init__(self) -> None:
        _make_valid(self)


@dataclass(frozen=True, slots=True)
class ConversationRef:
    """Where a message was written: a channel or DM, the thread within it if any (one
    conversation history per thread), and the message a reply should refer to."""

    platform: str
    channel_id: str
    is_dm: bool = False
    thread_id: str | None = None
    team_id: str | None = None
    reply_to: str | None = None

    def __post_init__(self) -> None:
        _make_valid(self)

    @property
    def key(self) -> str:
        """Events with the same key are handled in order."""
        return f"{self.platform}/{self.channel_id}"


@dataclass(frozen=True, slots=True)
class Message:
    """A message someone wrote; `text` has the bot's own mention removed."""

    conversation: ConversationRef
    author: UserRef
    text: str
    message_id: str
    event_id: str
    mentions_bot: bool = False
    link: str = ""  # the message on its platform, when it has web links

    def __post_init__(self) -> None:
        _make_valid(self)


@dataclass(frozen=True, slots=True)
class ReactionEvent:
    """A reaction added to (or removed from) a message; `emoji` is APPROVE, REJECT or other.
    `asked_in` is set on a decision a person asked for by a button or a command, as the
    core keeps it: the channel they asked in, where what it has to tell them goes to them
    alone; None for a reaction."""

    conversation: ConversationRef
    user: UserRef
    emoji: str
    target_message_id: str
    event_id: str
    added: bool = True
    asked_in: str | None = None

    def __post_init__(self) -> None:
        _make_valid(self)


Answer = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlashCommand(Message):
    """`/lorebot …` typed by a person: `text` is what follows the command ("remember that
    …", "recall deploys", "undo"). `answer` reaches that person alone (Slack's ephemeral
    message, Discord's ephemeral follow-up); cards are still posted in the conversation.
    The adapter acknowledged the command already; every command gets one `answer`."""

    answer: Answer


@dataclass(frozen=True, slots=True)
class Button:
    """A button under a card: `value` is what a click on it brings back, unread by the
    adapter; `style` is "primary", "danger" or "" (the platform's plain button)."""

    label: str
    value: str
    style: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonClick:
    """A click on a button of a message the bot posted, acknowledged by the adapter
    already. `value` is the button's, as the platform brought it back (not trusted: anyone
    can forge one); `answer` reaches the person who clicked alone."""

    conversation: ConversationRef
    user: UserRef
    value: str
    message_id: str
    event_id: str
    answer: Answer

    def __post_init__(self) -> None:
        _make_valid(self)


Event = Message | ReactionEvent | ButtonClick
EventSink = Callable[[Event], Awaitable[None]]


class NotTaken(Exception):
    """Raised by the event sink for an event the core did not take because lorebot is
    stopping. A platform that sends an unacknowledged event again (Slack) leaves it
    unacknowledged, so that another of the app's connections gets it; others drop it."""


@dataclass(frozen=True, slots=True)
class PostedMessage:
    """A message the bot posted, so it can be edited or reacted to later."""

    conversation: ConversationRef
    message_id: str


class Adapter(Protocol):
    """What every chat platform implements."""

    platform: str
    max_message_chars: int

    @property
    def connected(self) -> bool:
        """False while the platform connection is down (reconnecting)."""

    async def start(self, sink: EventSink) -> None:
        """Connect and begin delivering events to `sink`; returns once connected."""

    async def close(self) -> None:
        """Disconnect; safe to call twice."""

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        """Post `text` in the conversation (in its thread when it has one)."""

    async def edit(self, posted: PostedMessage, text: str) -> None:
        """Replace the text of a message the bot posted, and take its buttons away."""

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        """React to a message the bot posted; `emoji` is APPROVE or REJECT."""


@runtime_checkable
class ShowsButtons(Protocol):
    """An adapter that can put buttons under a message it posts; optional. A click comes
    to the event sink as a `ButtonClick`, and `edit` takes the buttons away. While
    `shows_buttons` is False (the platform's app cannot take clicks), `send_card` posts
    the text alone."""

    shows_buttons: bool

    async def send_card(
        self, conversation: ConversationRef, text: str, buttons: Sequence[Button]
    ) -> PostedMessage:
        """Post `text` as `send` does, with `buttons` under it."""


@runtime_checkable
class OpensDirect(Protocol):
    """An adapter that can open the bot's direct conversation with a person; optional."""

    async def direct_conversation(self, user_id: str) -> ConversationRef:
        """The DM between the bot and the person `user_id`, opened if need be; raises
        `DeliveryError` when the platform refuses."""


@runtime_checkable
class AnswersPrivately(Protocol):
    """An adapter that can show a person alone a message in a conversation, outside any
    interaction (Slack's ephemeral messages); optional."""

    async def answer_privately(
        self, conversation: ConversationRef, user_id: str, text: str
    ) -> None:
        """Show `text` in `conversation` to `user_id` alone."""


@dataclass(frozen=True, slots=True)
class Memberships:
    """The workspaces or servers (team ids) and the channels a person is in, as their
    platform says now."""

    teams: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()


@runtime_checkable
class KnowsMemberships(Protocol):
    """An adapter that can say where a person is (the web console asks at sign-in, to show
    them their channels' and teams' notes); optional."""

    async def memberships(self, user_id: str) -> Memberships | None:
        """Where `user_id` is; nothing where the platform does not say (no scope for it);
        None when it cannot be asked now (another replica holds its connection)."""


@runtime_checkable
class MeasuresText(Protocol):
    """An adapter whose posted text is longer than the text it is given (escaping,
    conversion to its markup); optional. The core splits replies by this length."""

    def text_length(self, text: str) -> int:
        """How many characters of the platform's limit `text` takes once converted."""


def shows_buttons(adapter: Adapter) -> bool:
    """Whether the adapter's cards get buttons."""
    return isinstance(adapter, ShowsButtons) and adapter.shows_buttons


def measure(adapter: Adapter) -> Callable[[str], int]:
    """How the core counts a text against the adapter's `max_message_chars`."""
    return adapter.text_length if isinstance(adapter, MeasuresText) else len


# What the bot is doing, for platforms that show a status line while it works.
THINKING = "is thinking…"
SEARCHING = "is searching notes…"
AWAITING_APPROVAL = "is waiting for your approval on the card"

Status = Callable[[str], Awaitable[None]]


async def _no_status(text: str) -> None:
    return None


@runtime_checkable
class ShowsWork(Protocol):
    """An adapter that can show people the bot is working (a status line, a typing
    indicator); optional, so adapters without one need not implement it."""

    def working(self, conversation: ConversationRef) -> AbstractAsyncContextManager[Status]:
        """Show that the bot is working in `conversation` while the block is open (THINKING
        first); the block gets a function that changes the status text (SEARCHING,
        AWAITING_APPROVAL) where the platform shows one. Never raises for the platform's
        refusal and never holds the block up for long."""


@contextlib.asynccontextmanager
async def _not_shown() -> AsyncIterator[Status]:
    yield _no_status


def working(adapter: Adapter, conversation: ConversationRef) -> AbstractAsyncContextManager[Status]:
    """The adapter's "working…" indicator for `conversation`, or nothing when it has none."""
    if isinstance(adapter, ShowsWork):
        return adapter.working(conversation)
    return _not_shown()


class ReplyStream(Protocol):
    """One reply message that grows while the model writes it. The core calls `show` with
    the whole text so far (never more often than the adapter's `stream_interval_s`, never
    longer than `max_message_chars`), then `finish` once with the final text, which is
    what the conversation history keeps: after `finish` the message says exactly that."""

    @property
    def posted(self) -> PostedMessage | None:
        """The message once it exists on the platform (for mending after a crash)."""

    async def show(self, text: str) -> None:
        """Make the message show `text`; may post it, append to it or edit it, and may
        wait for `finish` when the platform cannot show this change."""

    async def finish(self, text: str) -> PostedMessage:
        """Make the message say exactly `text` and end the stream (posting it now if
        nothing was shown yet); raises `DeliveryError` when the platform refuses."""


@runtime_checkable
class StreamsReplies(Protocol):
    """An adapter that can show a reply while it is written; optional."""

    stream_interval_s: float

    def stream_reply(self, conversation: ConversationRef, recipient: UserRef) -> ReplyStream:
        """A new, not yet posted reply in `conversation` to `recipient`'s message."""
