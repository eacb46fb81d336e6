"""The terminal adapter behind `lorebot chat`: lines in, replies out, cards answered with y/n.

It reads piped stdin too, so a script can drive a whole conversation: after each line it
waits until the bot has answered before reading the next.
"""

from __future__ import annotations

import asyncio
import io
import re
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import TextIO

from adapters.base import (
    APPROVE,
    REJECT,
    ConversationRef,
    EventSink,
    Message,
    PostedMessage,
    ReactionEvent,
    UserRef,
)

_YES = {"y", "yes", APPROVE, ":white_check_mark:", "✔"}
_NO = {"n", "no", REJECT, ":x:"}


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
    ) -> None:
        self.user = UserRef("console", console_id(user), user)
        channel_id = console_id(channel) if channel else f"dm-{self.user.id}"
        self.conversation = ConversationRef("console", channel_id, is_dm=channel is None)
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.bot_name = bot_name
        self._sink: EventSink | None = None
        self._open_cards: list[str] = []

    async def start(self, sink: EventSink) -> None:
        self._sink = sink

    async def close(self) -> None:
        self._sink = None

    def _print(self, text: str) -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        message_id = f"console-{uuid.uuid4().hex[:12]}"
        self._print(f"{self.bot_name}> {text}")
        return PostedMessage(conversation, message_id)

    async def edit(self, posted: PostedMessage, text: str) -> None:
        if posted.message_id in self._open_cards:
            self._open_cards.remove(posted.message_id)
        self._print(f"{self.bot_name} (card updated)> {text}")

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        if posted.message_id not in self._open_cards:
            self._open_cards.append(posted.message_id)
            self._print("    answer: y = ✅ approve, n = ❌ discard")

    def event_for(self, line: str) -> Message | ReactionEvent | None:
        text = line.strip()
        if not text:
            return None
        event_id = uuid.uuid4().hex
        if self._open_cards and text.lower() in _YES | _NO:
            emoji = APPROVE if text.lower() in _YES else REJECT
            return ReactionEvent(
                self.conversation, self.user, emoji, self._open_cards[-1], event_id
            )
        return Message(self.conversation, self.user, text, event_id, event_id, mentions_bot=True)

    async def run(self, settle: Callable[[], Awaitable[None]]) -> None:
        """Read lines until end of input; each is handled before the next is read."""
        interactive = self.stdin.isatty()
        _tolerate_bad_bytes(self.stdin)
        while True:
            if interactive:
                self.stdout.write(f"{self.user.name}> ")
                self.stdout.flush()
            line = await asyncio.to_thread(self.stdin.readline)
            if not line:
                return
            event = self.event_for(line)
            if event is None or self._sink is None:
                continue
            await self._sink(event)
            await settle()


def _tolerate_bad_bytes(stdin: TextIO) -> None:
    """Decode bytes that are not UTF-8 as U+FFFD instead of failing the read: a strict
    stream (e.g. under a UTF-8 locale) would end the chat at the first such line."""
    if isinstance(stdin, io.TextIOWrapper) and stdin.errors == "strict":
        stdin.reconfigure(errors="replace")
