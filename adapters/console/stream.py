"""A reply printed in the terminal as the model writes it, as plain text."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from adapters.base import ConversationRef, PostedMessage
from adapters.console.screen import Screen

# Characters that may start markup, whose plain form is known only once the line is done.
_MARKUP = re.compile(r"[*_~`<>&\[\]#|•]")


class ConsoleReplyStream:
    """Prints each new piece of the reply after `name> ` as plain text, while the screen can
    show an unfinished line: prose as it comes, a line with markup once it is complete. The
    final text is printed again in full when it is not what was printed (a notice added, the
    reply cut, a code block), or when its line was cut (the prompt came back meanwhile)."""

    def __init__(
        self,
        conversation: ConversationRef,
        screen: Screen,
        name: str,
        plain: Callable[[str], str],
    ) -> None:
        self.conversation = conversation
        self._screen = screen
        self._name = name
        self._plain = plain
        self._printed = ""
        self._done = ""  # the complete lines of the text last shown, and their plain form
        self._done_plain = ""
        self._posted: PostedMessage | None = None

    @property
    def posted(self) -> PostedMessage | None:
        return self._posted

    async def show(self, text: str) -> None:
        printable = self._printable(text)
        if not printable.startswith(self._printed) or printable == self._printed:
            return
        if self._printed and not self._screen.holds(self):
            return  # its line was cut: the whole reply is printed when it is done
        piece = printable[len(self._printed) :]
        if not self._screen.extend(self, piece if self._printed else f"{self._name}> {piece}"):
            return
        self._printed = printable
        if self._posted is None:
            self._posted = PostedMessage(self.conversation, f"console-{uuid.uuid4().hex[:12]}")

    def _printable(self, text: str) -> str:
        """The plain text that will not change as the model writes on: the complete lines,
        and the current line up to where markup may start."""
        done, newline, current = text.rpartition("\n")
        if done != self._done:  # complete lines change only at a line break
            self._done, self._done_plain = done, self._plain(done)
        markup = _MARKUP.search(current)
        ahead = current if markup is None else current[: markup.start()]
        return (self._done_plain + newline if newline else "") + ahead

    async def finish(self, text: str) -> PostedMessage:
        plain = self._plain(text)
        if self._posted is None:
            self._posted = PostedMessage(self.conversation, f"console-{uuid.uuid4().hex[:12]}")
        printed, self._printed = self._printed, plain
        if printed and plain.startswith(printed):
            if self._screen.finish(self, plain[len(printed) :]):
                return self._posted
        else:
            self._screen.finish(self, "")  # what it printed stays, as it was
        self._screen.line(f"{self._name}> {plain}")
        return self._posted
