"""A reply printed in the terminal as the model writes it, as plain text."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TextIO

from adapters.base import ConversationRef, PostedMessage

# Characters that may start markup, whose plain form is known only once the line is done.
_MARKUP = re.compile(r"[*_~`<>&\[\]#|•]")


class ConsoleReplyStream:
    """Prints each new piece of the reply after `name> ` as plain text: prose as it comes,
    a line with markup once it is complete. The final text is printed again in full only
    when it is not what was printed (a notice added, the reply cut, a code block)."""

    def __init__(
        self,
        conversation: ConversationRef,
        stdout: Callable[[], TextIO],
        name: str,
        plain: Callable[[str], str],
        *,
        live: bool,
    ) -> None:
        self.conversation = conversation
        self._stdout = stdout  # read at each write: the terminal chat swaps it for its proxy
        self._name = name
        self._plain = plain
        self._live = live  # piped output gets the whole reply at once
        self._printed = ""
        self._done = ""  # the complete lines of the text last shown, and their plain form
        self._done_plain = ""
        self._posted: PostedMessage | None = None

    @property
    def posted(self) -> PostedMessage | None:
        return self._posted

    async def show(self, text: str) -> None:
        printable = self._printable(text)
        if not self._live or not printable.startswith(self._printed):
            return
        if printable == self._printed:
            return
        if self._posted is None:
            self._posted = PostedMessage(self.conversation, f"console-{uuid.uuid4().hex[:12]}")
            self._write(f"{self._name}> ")
        self._write(printable[len(self._printed) :])
        self._printed = printable

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
            self._write(f"{self._name}> {plain}\n")
        elif plain.startswith(self._printed):
            self._write(plain[len(self._printed) :] + "\n")
        else:
            self._write(f"\n{self._name}> {plain}\n")
        self._printed = plain
        return self._posted

    def _write(self, text: str) -> None:
        stdout = self._stdout()
        stdout.write(text)
        stdout.flush()
