"""`lorebot chat` in a pseudo-terminal, as a person uses it: keys typed in one by one, and
what the terminal shows read back, both as the text written (escape sequences removed) and
as the screen a terminal emulator draws from it (pyte), where text that was erased or
overwritten is gone, as it is for the person.

prompt_toolkit needs a real terminal (it reads the size and switches the tty to raw mode),
so the child gets a pty as its controlling terminal, with a fixed size.
"""

from __future__ import annotations

import asyncio
import codecs
import fcntl
import os
import re
import struct
import sys
import termios
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pyte
import pytest_asyncio

from tests.fakes.ollama import FakeOllama
from tests.support.paths import ROOT

CLEARED = ("LOREBOT_", "XDG_", "STATE_DIRECTORY", "OLLAMA_HOST", "NOTIFY_SOCKET", "WATCHDOG_")
ROWS, COLUMNS = 30, 100
START_S = 90.0  # importing and starting lorebot on a slow, shared machine
EXPECT_S = 30.0

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, colours, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window title
    r"|\x1b[()][0-9A-Za-z]"  # character sets
    r"|\x1b[@-Z\\-_=>78]"  # the other two-character escapes
    r"|[\r\x07]"
)


class Terminal:
    """The person's side of a pseudo-terminal: keys go in, the screen's text comes out
    (escape sequences removed), and expectations wait until a text appears."""

    def __init__(self, master: int, process: asyncio.subprocess.Process) -> None:
        self.master = master
        self.process = process
        self.closed = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._raw = ""
        self._seen = 0
        self._changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(master, self._read)

    @property
    def screen(self) -> str:
        """Everything written so far, as text."""
        return _ESCAPES.sub("", self._raw)

    @property
    def display(self) -> list[str]:
        """The rows the terminal shows now, as a terminal draws them from what was written,
        each COLUMNS wide: erased text is gone, and a line longer than a row goes on in the
        next (joined, the rows give it back whole)."""
        screen = pyte.Screen(COLUMNS, ROWS)
        pyte.Stream(screen).feed(self._raw)
        return list(screen.display)

    def _read(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed its side
            data = b""
        if not data:
            self.closed = True
            asyncio.get_running_loop().remove_reader(self.master)
        self._raw += self._decoder.decode(data)
        self._changed.set()

    async def expect(self, text: str, within: float = EXPECT_S, *, anywhere: bool = False) -> str:
        """Wait until `text` appears after what earlier expectations matched (or anywhere,
        for what is printed above a prompt that may be drawn first); return the screen
        between the two."""
        start = 0 if anywhere else self._seen
        try:
            async with asyncio.timeout(within):
                while (found := self.screen.find(text, start)) < 0:
                    if self.closed:
                        raise AssertionError(f"lorebot ended before {text!r}")
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"{text!r} not shown; the screen ends:\n{self.tail()}") from None
        between = self.screen[start:found]
        self._seen = max(self._seen, found + len(text))
        return between

    async def until_shown(
        self, holds: Callable[[list[str]], bool], within: float = EXPECT_S
    ) -> None:
        """Wait until the screen as the terminal draws it (`display`, its rows right-stripped
        and the blank ones left out) is what `holds` looks for."""
        try:
            async with asyncio.timeout(within):
                while not holds([row.rstrip() for row in self.display if row.strip()]):
                    if self.closed:
                        raise AssertionError("lorebot ended before the screen was as expected")
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            rows = "\n".join(self.display)
            raise AssertionError(f"the screen is not as expected:\n{rows}") from None

    def skip_to_end(self) -> None:
        """Let the next expectation look only at what appears from now on."""
        self._seen = len(self.screen)

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.screen.splitlines()[-lines:])

    async def type(self, keys: str) -> None:
        data = keys.encode()
        for start in range(0, len(data), 256):
            await asyncio.to_thread(_write_all, self.master, data[start : start + 256])

    async def prompt(self) -> None:
        """Wait for the prompt, ready for keys."""
        await self.expect("alice>")

    async def say(self, line: str) -> None:
        await self.prompt()
        await self.type(line + "\r")

    async def exit_code(self, within: float = EXPECT_S) -> int:
        try:
            async with asyncio.timeout(within):
                return await self.process.wait()
        except TimeoutError:
            raise AssertionError(f"lorebot did not end; the screen ends:\n{self.tail()}") from None

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        if not self.closed:
            asyncio.get_running_loop().remove_reader(self.master)
        os.close(self.master)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _take_terminal() -> None:
    """In the child, after `setsid`: make the pty its controlling terminal, so Ctrl-C
    becomes SIGINT as at a real terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def chat_env(home: Path, ollama_url: str) -> dict[str, str]:
    """A fresh person's environment: their own HOME and XDG folders, lorebot's database
    under it, Ollama at `ollama_url`, and an xterm."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    (home / "config" / "lorebot").mkdir(parents=True, exist_ok=True)
    (home / "config" / "lorebot" / "config.toml").write_text("")  # never /etc/lorebot
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        LOREBOT_DATABASE__PATH=str(home / "state" / "lorebot.db"),
        LOREBOT_SKILLS__HOME_ROOT=str(home / "home-skills"),
        LOREBOT_SKILLS__USER_ROOT=str(home / "user-skills"),
        LOREBOT_OLLAMA__HOST=ollama_url,
        PYTHONPATH=str(ROOT),
        PYTHONHASHSEED="0",
        TERM="xterm",
        LANG="C.UTF-8",
        # This pty answers no cursor-position requests, which a real terminal would.
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    return env


@pytest_asyncio.fixture
async def chats(fake_ollama: FakeOllama) -> AsyncIterator[list[Terminal]]:
    """The chats a test starts, ended before the fake Ollama closes."""
    started: list[Terminal] = []
    yield started
    for terminal in started:
        await terminal.close()


async def start_chat(
    chats: list[Terminal], home: Path, fake: FakeOllama | str, *argv: str
) -> Terminal:
    """`lorebot chat --user alice ARGV` in a new pseudo-terminal of ROWS x COLUMNS, with
    Ollama at `fake` (the fake, or a URL), once its prompt is shown."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    url = fake if isinstance(fake, str) else fake.url
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "chat",
            "--user",
            "alice",
            *argv,
            cwd=home,
            env=chat_env(home, url),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
    finally:
        os.close(slave)
    terminal = Terminal(master, process)
    chats.append(terminal)
    await terminal.expect("alice>", within=START_S)
    terminal.skip_to_end()
    return terminal


def _nothing_in_hand(home: Path) -> bool:
    """Whether the chat at `home` has finished every message it took: none waits in its
    inbox, and no conversation is claimed (the last claim is let go as its turn ends)."""
    from memory.sqlite.driver import sqlite_module  # lorebot's SQLite, for its WAL

    connection = sqlite_module().connect(home / "state" / "lorebot.db", timeout=5)
    try:
        waiting, claimed = connection.execute(
            "SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM conversation_claims)"
        ).fetchone()
    finally:
        connection.close()
    return waiting == 0 and claimed == 0


async def until_settled(home: Path, within: float = EXPECT_S) -> None:
    """Wait until the chat at `home` is done with its turn, not only shows its answer: the
    prompt after it is then idle (a key typed before that reaches the turn's wait)."""
    async with asyncio.timeout(within):
        while not await asyncio.to_thread(_nothing_in_hand, home):  # noqa: ASYNC110 - its process writes it
            await asyncio.sleep(0.05)


async def end_chat(terminal: Terminal) -> None:
    """Ctrl-D on an empty prompt: the chat ends cleanly."""
    await terminal.type("\x04")
    assert await terminal.exit_code() == 0, terminal.tail()
    assert "Traceback" not in terminal.screen
