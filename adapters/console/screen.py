"""What `lorebot chat` prints, line by line, and the one line at the bottom that may still be
unfinished: the working indicator, or a reply shown as the model writes it.

Above a prompt only whole lines can be printed. prompt_toolkit prints them above the line
being typed; a piece of a line would stay beside the prompt, which is then drawn over it
and erased with it (the reply would lose its label and its first words). So a reply is
shown as it is written only while no prompt is up, when the person waits for it; a reply
whose line was cut (Ctrl-C brings the prompt back, a log line comes) is printed again,
whole, when it is done.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

CUT = "…"  # ends a reply's line that another line cut; the whole reply follows later


class Screen:
    """The console's output: whole lines, and at most one unfinished line, held by whoever
    writes it (a reply stream, or the working indicator), which any other line ends first."""

    def __init__(self, stdout: Callable[[], TextIO], *, terminal: bool) -> None:
        self._stdout = stdout  # read at each write: the terminal chat swaps it for its proxy
        self.terminal = terminal  # a person's terminal, where unfinished lines can be shown
        self._prompting = False
        self._lock = threading.RLock()  # log lines can come from other threads
        self._holder: object | None = None  # whose unfinished line is the last one
        self._status = ""  # the working indicator's text, while it is that line

    @property
    def live(self) -> bool:
        """Whether an unfinished line can be shown now: at a terminal, with no prompt up."""
        return self.terminal and not self._prompting

    def holds(self, owner: object) -> bool:
        """Whether `owner`'s unfinished line is still the last one."""
        return self._holder is owner

    def line(self, text: str) -> None:
        """Print `text` and a line break, below the unfinished line (which ends there)."""
        with self._lock:
            self._end_open()
            self._write(text + "\n")

    def extend(self, owner: object, text: str) -> bool:
        """Add `text` to `owner`'s unfinished line, which it starts when none or only the
        indicator is there; False, printing nothing, when it cannot be shown now."""
        with self._lock:
            if not self.live or (self._holder not in (None, owner) and not self._status):
                return False
            if self._holder is not owner:
                self._end_open()
                self._holder = owner
            self._write(text)
            return True

    def finish(self, owner: object, text: str) -> bool:
        """End `owner`'s unfinished line with `text`; False, printing nothing, when another
        line has ended it."""
        with self._lock:
            if self._holder is not owner:
                return False
            self._holder = None
            self._write(text + "\n")
            return True

    def show_status(self, owner: object, text: str) -> None:
        """Show `text` as `owner`'s working indicator on the last line, when no reply is
        being written there and no prompt is up."""
        with self._lock:
            if not self.live or (self._holder is not None and not self._status):
                return
            self._end_open()
            self._holder, self._status = owner, text
            self._write(text)

    def clear_status(self, owner: object) -> None:
        """Take `owner`'s working indicator away, if it is shown."""
        with self._lock:
            if self._status and self._holder is owner:
                self._end_open()

    @contextlib.contextmanager
    def prompt(self) -> Iterator[None]:
        """While a prompt is up: the unfinished line ends before it, and only whole lines
        are printed (above it)."""
        with self._lock:
            self._end_open()
            self._prompting = True
        try:
            yield
        finally:
            self._prompting = False

    def _end_open(self) -> None:
        if self._status:  # the indicator goes: spaces over it, back to its start
            self._write("\r" + " " * len(self._status) + "\r")
        elif self._holder is not None:
            self._write(CUT + "\n")
        self._holder, self._status = None, ""

    def _write(self, text: str) -> None:
        stdout = self._stdout()
        stdout.write(text)
        stdout.flush()


class LineWriter(io.TextIOBase):
    """A text stream that prints what is written to it through the screen, line by line:
    for the log handlers while the chat is on the terminal."""

    def __init__(self, screen: Screen) -> None:
        super().__init__()
        self._screen = screen
        self._pending = ""

    def write(self, text: str) -> int:
        lines, newline, self._pending = (self._pending + text).rpartition("\n")
        if newline:
            self._screen.line(lines)
        return len(text)

    def writable(self) -> bool:
        return True
