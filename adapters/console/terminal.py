"""The terminal around `lorebot chat`: the prompt's history file, logs shown above the
prompt, Ctrl-C, and typeahead that is not echoed while the bot answers."""

from __future__ import annotations

import io
import logging
import os
import signal
import termios
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from prompt_toolkit.history import History

_log = logging.getLogger(__name__)


def history_for(path: Path | None) -> History:
    """The prompt's history: a file only its owner reads, else (no path, or the file
    cannot be used) kept in memory for this chat."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    if path is None:
        return InMemoryHistory()
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600))
    except OSError as exc:
        _log.warning("chat history is kept in memory only: cannot use %s (%s)", path, exc)
        return InMemoryHistory()

    class SafeFileHistory(FileHistory):
        """A file history that a full disk or a removed file does not end the chat."""

        def store_string(self, string: str) -> None:
            try:
                super().store_string(string)
            except OSError as exc:
                _log.warning("could not save the chat history to %s (%s)", path, exc)

    return SafeFileHistory(path)


@contextmanager
def logs_through(stream: TextIO | io.TextIOBase, terminal: Sequence[TextIO]) -> Iterator[None]:
    """Point the logging handlers that write to the terminal at `stream`, so a log line
    appears above the prompt instead of inside what the person is typing."""
    moved = [
        handler
        for handler in logging.getLogger().handlers
        if isinstance(handler, logging.StreamHandler) and any(handler.stream is t for t in terminal)
    ]
    previous = [handler.stream for handler in moved]
    for handler in moved:
        handler.setStream(stream)
    try:
        yield
    finally:
        for handler, old in zip(moved, previous, strict=True):
            handler.setStream(old)


@contextmanager
def on_sigint(callback: Callable[[], object]) -> Iterator[None]:
    """Call `callback` on Ctrl-C instead of stopping the program, where signals can be
    handled (the main thread). A Python-level handler, because the prompt saves and
    restores that one around each line it reads; the previous one is restored at the end."""
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, lambda signum, frame: callback())
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous or signal.default_int_handler)


@contextmanager
def typeahead_unechoed(stream: TextIO) -> Iterator[None]:
    """Keep the terminal from echoing keys (and from waiting for a whole line) while no
    prompt is shown; Ctrl-C still interrupts."""
    try:
        fd = stream.fileno()
        before = termios.tcgetattr(fd)
    except (OSError, ValueError, termios.error):
        yield
        return
    quiet = list(before)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, before)


# --- plain text -----------------------------------------------------------------------------
