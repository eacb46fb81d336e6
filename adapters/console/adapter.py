"""The terminal adapter behind `lorebot chat`: lines in, plain-text replies out, cards
answered with `y`/`n` (the newest card of this chat) or `y 12`/`n 12` (card #12).

At a terminal it is a prompt_toolkit prompt with line editing and history, and everything
the bot prints appears above it; while the person waits, `lorebot is thinking…` shows and
the answer is printed as it is written. Piped stdin is read line by line instead, so a
script can drive a whole conversation: after each line it waits until the bot has answered.
A line of `/quit`, `/exit`, `quit` or `exit` ends the chat, as the end of input does.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from adapters.base import (
    APPROVE,
    REJECT,
    THINKING,
    ConversationRef,
    EventSink,
    Message,
    NotTaken,
    PostedMessage,
    ReactionEvent,
    ReplyStream,
    Status,
    UserRef,
)
from adapters.console.screen import LineWriter, Screen
from adapters.console.stream import ConsoleReplyStream
from adapters.console.terminal import history_for, logs_through, on_sigint, typeahead_unechoed
from adapters.console.text import plain_text

_log = logging.getLogger(__name__)

_YES = {"y", "yes", APPROVE, ":white_check_mark:", "✔"}
_NO = {"n", "no", REJECT, ":x:"}
_WORDS = {"yes", "no"}
_ANSWER = re.compile(r"(\S+)(?:\s+#?(\d+))?")
_CARD_NUMBER = re.compile(r"\(proposal #(\d+)\)")
# A line alone that ends the chat, as Ctrl-D on an empty line does.
QUIT_WORDS = frozenset({"/quit", "/exit", "quit", "exit"})

Settle = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class OpenCard:
    """A card waiting for an answer: its proposal's number, its message, what it asks."""

    proposal_id: int | None
    message_id: str
    label: str = ""


OpenCards = Callable[[], Awaitable[Sequence[OpenCard]]]


def console_id(name: str) -> str:
    """A scope-safe id from a typed name."""
    return re.sub(r"[^A-Za-z0-9_.@-]+", "-", name.strip()).strip("-") or "me"


class ConsoleAdapter:
    """A person at a terminal, in a DM with the bot or in a named channel."""

    platform = "console"
    max_message_chars = 4000
    connected = True

    def __init__(
        self,
        user: str,
        channel: str | None = None,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        bot_name: str = "lorebot",
        history: Path | None = None,
    ) -> None:
        self.user = UserRef("console", console_id(user), user)
        channel_id = console_id(channel) if channel else f"dm-{self.user.id}"
        self.conversation = ConversationRef("console", channel_id, is_dm=channel is None)
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.bot_name = bot_name
        self.history = history  # the prompt's history file; None keeps it in memory
        self._sink: EventSink | None = None
        self._open_cards: OpenCards | None = None
        self._cards: dict[str, OpenCard] = {}  # by message id, oldest first
        self._session: list[str] = []  # the cards this chat posted, oldest first
        self._last_sent: tuple[str, str] = ("", "")
        self._interrupted: asyncio.Future[None] | None = None  # set while waiting
        self._screen = Screen(lambda: self.stdout, terminal=self.stdout.isatty())

    async def start(self, sink: EventSink) -> None:
        self._sink = sink

    async def close(self) -> None:
        self._sink = None

    @property
    def interactive(self) -> bool:
        """Whether a person types the lines (stdin is a terminal), not a script."""
        return self.stdin.isatty()

    def _print(self, text: str) -> None:
        self._screen.line(text)

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        message_id = f"console-{uuid.uuid4().hex[:12]}"
        self._last_sent = (message_id, text)
        self._print(f"{self.bot_name}> {plain_text(text)}")
        return PostedMessage(conversation, message_id)

    stream_interval_s = 0.0

    def stream_reply(self, conversation: ConversationRef, recipient: UserRef) -> ReplyStream:
        """The reply printed as it is written, at a terminal while no prompt is up; else
        printed when done."""
        return ConsoleReplyStream(conversation, self._screen, self.bot_name, plain_text)

    @contextlib.asynccontextmanager
    async def working(self, conversation: ConversationRef) -> AsyncIterator[Status]:
        """`lorebot is thinking…` on the last line while the bot works and the person waits
        at a terminal, gone when the answer comes."""
        owner = object()

        async def status(text: str) -> None:
            self._screen.show_status(owner, f"{self.bot_name} {text}")

        await status(THINKING)
        try:
            yield status
        finally:
            self._screen.clear_status(owner)

    async def edit(self, posted: PostedMessage, text: str) -> None:
        self._forget_card(posted.message_id)
        self._print(f"{self.bot_name} (card updated)> {plain_text(text)}")

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        if posted.message_id in self._cards:
            return
        sent_id, text = self._last_sent
        number = _card_number(text) if sent_id == posted.message_id else None
        self._cards[posted.message_id] = OpenCard(number, posted.message_id)
        self._session.append(posted.message_id)
        later = f" ({_answer_hint(number)} answers this card later)" if number else ""
        self._print(f"    answer: y = {APPROVE} approve, n = {REJECT} discard{later}")

    def _forget_card(self, message_id: str) -> None:
        self._cards.pop(message_id, None)
        if message_id in self._session:
            self._session.remove(message_id)

    # --- reading ------------------------------------------------------------------------

    async def event_for(self, line: str) -> Message | ReactionEvent | str | None:
        """What a typed line means: a message, an answer to a card, a line the console
        answers itself (an answer with no card to take it), or nothing."""
        text = line.strip()
        if not text:
            return None
        answer = _card_answer(text)
        if answer is not None:
            emoji, number = answer
            await self._refresh_cards()
            # `yes`/`no` alone are also replies to the model's questions: they answer a
            # card only while this chat has one open.
            if number is not None or self._session or text.lower() not in _WORDS:
                return self._reaction(emoji, number)
        event_id = uuid.uuid4().hex
        return Message(self.conversation, self.user, text, event_id, event_id, mentions_bot=True)

    def _reaction(self, emoji: str, number: int | None) -> ReactionEvent | str:
        if number is None:
            if not self._session:
                if self._cards:
                    return self._with_open_cards("no card from this chat to answer")
                return "no open card to answer"
            target = self._cards[self._session[-1]]
        else:
            found = [card for card in self._cards.values() if card.proposal_id == number]
            if not found:
                return self._with_open_cards(f"no open card #{number}")
            target = found[0]
        event_id = uuid.uuid4().hex
        return ReactionEvent(self.conversation, self.user, emoji, target.message_id, event_id)

    def _with_open_cards(self, text: str) -> str:
        numbers = [card.proposal_id for card in self._cards.values() if card.proposal_id]
        if not numbers:
            return text
        listed = ", ".join(f"#{n}" for n in numbers)
        return f"{text}; open cards: {listed} (answer one with {_answer_hint(numbers[0])})"

    async def _refresh_cards(self) -> None:
        """Take the open cards from storage, which also knows cards of earlier chats and
        cards decided elsewhere (`lorebot proposals approve`)."""
        if self._open_cards is None:
            return
        cards = await self._open_cards()
        self._cards = {card.message_id: card for card in cards}
        self._session = [m for m in self._session if m in self._cards]

    async def _show_open_cards(self) -> None:
        await self._refresh_cards()
        listed = [card for card in self._cards.values() if card.proposal_id is not None]
        if not listed:
            return
        shown = "; ".join(f"#{card.proposal_id} {card.label}".rstrip() for card in listed)
        self._print(f"    open cards: {shown}")
        self._print(f"    answer one with {_answer_hint(listed[0].proposal_id)}")

    async def _take(self, line: str, settle: Settle, *, interruptible: bool = False) -> None:
        event = await self.event_for(line)
        if isinstance(event, str):
            self._print(f"    {event}")
            return
        if event is None or self._sink is None:
            return
        try:
            await self._sink(event)
        except NotTaken:
            self._print("    lorebot is stopping; that was not taken")
            return
        if not interruptible:
            await settle()
        elif not await self._wait_interruptibly(settle):
            self._print("    (stopped waiting; the answer will appear here when it is ready)")
            return
        if isinstance(event, ReactionEvent):
            await self._say_if_still_open(event.target_message_id)

    async def _say_if_still_open(self, message_id: str) -> None:
        if self._open_cards is None:
            return
        await self._refresh_cards()
        card = self._cards.get(message_id)
        if card is not None and card.proposal_id is not None:
            self._print(
                f"    card #{card.proposal_id} is still open: only the person who asked "
                "for it, or an admin, can decide it"
            )

    async def run(
        self, settle: Settle, open_cards: OpenCards | None = None, banner: str = ""
    ) -> None:
        """Read lines until end of input or a quit word; each is handled before the next is
        read.

        `open_cards` gives the cards of this conversation still waiting for an answer,
        also those of earlier chats, so `y 12` can answer them. `banner` is printed first
        when a person types the lines."""
        self._open_cards = open_cards
        if self.interactive and self.stdout.isatty():
            await self._run_terminal(settle, banner)
            return
        if self.interactive and banner:
            self._print(banner)
        await self._show_open_cards()
        _tolerate_bad_bytes(self.stdin)
        while True:
            if self.interactive:
                self.stdout.write(f"{self.user.name}> ")
                self.stdout.flush()
            line = await asyncio.to_thread(self.stdin.readline)
            if not line or _quits(line):
                return
            await self._take(line, settle)

    # --- at a terminal ------------------------------------------------------------------

    async def _run_terminal(self, settle: Settle, banner: str) -> None:
        """A prompt with line editing and history; replies and log lines are printed
        above it. Ctrl-C clears the line (or stops waiting for an answer); Ctrl-D on an
        empty line, or a quit word, ends the chat."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.patch_stdout import patch_stdout

        if banner:
            self._print(banner)
        session: PromptSession[str] = PromptSession(history=history_for(self.history))
        before, terminal = self.stdout, (sys.stdout, sys.stderr)
        loop = asyncio.get_running_loop()
        with (
            patch_stdout(),
            logs_through(LineWriter(self._screen), terminal),
            on_sigint(lambda: loop.call_soon_threadsafe(self._interrupt)),
        ):
            self.stdout = sys.stdout
            try:
                await self._show_open_cards()
                while True:
                    try:
                        with self._screen.prompt():
                            line = await session.prompt_async(f"{self.user.name}> ")
                    except KeyboardInterrupt:
                        continue
                    except EOFError:
                        return
                    if _quits(line):
                        return
                    await self._take(line, settle, interruptible=True)
            finally:
                self.stdout = before

    async def _wait_interruptibly(self, settle: Settle) -> bool:
        """Wait for the bot to answer; False when the person pressed Ctrl-C first (the
        answer still comes, above the next prompt). Keys typed meanwhile are not echoed
        into the replies: the next prompt shows them."""
        self._interrupted = interrupted = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(settle())
        try:
            with typeahead_unechoed(self.stdin):
                await asyncio.wait({waiting, interrupted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._interrupted = None
            if not waiting.done():
                waiting.cancel()
                await asyncio.wait({waiting})
        return not interrupted.done()

    def _interrupt(self) -> None:
        """Ctrl-C outside the prompt: stop waiting for an answer, if waiting; between two
        prompts it does nothing (the prompt handles its own Ctrl-C)."""
        if self._interrupted is not None and not self._interrupted.done():
            self._interrupted.set_result(None)


def _quits(line: str) -> bool:
    return line.strip().lower() in QUIT_WORDS


def _card_answer(text: str) -> tuple[str, int | None] | None:
    """(emoji, card number or None) when `text` answers a card: `y`, `n 12`, `✅ 12`…"""
    match = _ANSWER.fullmatch(text)
    if match is None:
        return None
    word = match.group(1).lower()
    if word not in _YES | _NO:
        return None
    number = int(match.group(2)) if match.group(2) else None
    return (APPROVE if word in _YES else REJECT), number


def _card_number(text: str) -> int | None:
    """The proposal number on a card's first line: `… (proposal #12)`."""
    found = _CARD_NUMBER.search(text.partition("\n")[0])
    return int(found.group(1)) if found else None


def _answer_hint(number: int | None) -> str:
    return f"y {number} or n {number}"


def _tolerate_bad_bytes(stdin: TextIO) -> None:
    """Decode bytes that are not UTF-8 as U+FFFD instead of failing the read: a strict
    stream (e.g. under a UTF-8 locale) would end the chat at the first such line."""
    if isinstance(stdin, io.TextIOWrapper) and stdin.errors == "strict":
        stdin.reconfigure(errors="replace")
