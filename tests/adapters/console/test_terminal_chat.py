"""`lorebot chat` as a person uses it: the real command in a pseudo-terminal, typed into key
by key and read from the screen, against the fake Ollama; then the same card answers
through piped stdin, and the plain-text rendering of replies.

prompt_toolkit needs a real terminal (it reads the size and switches the tty to raw mode),
so the terminal tests give the child a pty as its controlling terminal with a fixed size.
"""

from __future__ import annotations

import asyncio
import codecs
import fcntl
import io
import json
import os
import re
import struct
import sys
import termios
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.console.text import plain_text
from bot.cli.main import main
from memory import Scope
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore
from tests.fakes.ollama import FakeOllama
from tests.support.paths import ROOT as ROOT

CLEARED = ("LOREBOT_", "XDG_", "STATE_DIRECTORY", "OLLAMA_HOST", "NOTIFY_SOCKET", "WATCHDOG_")
ROWS, COLUMNS = 30, 100
START_S = 90.0  # importing and starting lorebot on a slow, shared machine
EXPECT_S = 30.0
ALICE = Scope.parse("user:console/alice")
TITLE = json.dumps({"topic": "staging-db", "summary": "the staging DB is pg-stage-2"})

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
        """Everything shown so far, as text."""
        return _ESCAPES.sub("", self._raw)

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
        async with asyncio.timeout(within):
            return await self.process.wait()

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


def chat_env(home: Path, fake: FakeOllama) -> dict[str, str]:
    """A fresh person's environment: their own HOME and XDG folders, lorebot's database
    under tmp, the fake Ollama, and an xterm."""
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
        LOREBOT_OLLAMA__HOST=fake.url,
        PYTHONPATH=str(ROOT),
        PYTHONHASHSEED="0",
        TERM="xterm",
        LANG="C.UTF-8",
        # This pty answers no cursor-position requests, which a real terminal would.
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    return env


@pytest.fixture
async def chats(fake_ollama: FakeOllama) -> AsyncIterator[list[Terminal]]:
    """The chats a test starts, ended before the fake Ollama closes."""
    started: list[Terminal] = []
    yield started
    for terminal in started:
        await terminal.close()


async def start_chat(chats: list[Terminal], home: Path, fake: FakeOllama, *argv: str) -> Terminal:
    """`lorebot chat --user alice ARGV` in a new pseudo-terminal of ROWS x COLUMNS."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli.main", "chat", "--user", "alice", *argv,
            cwd=home, env=chat_env(home, fake), stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True, preexec_fn=_take_terminal,
        )  # fmt: skip
    finally:
        os.close(slave)
    terminal = Terminal(master, process)
    chats.append(terminal)
    await terminal.expect("alice>", within=START_S)
    terminal.skip_to_end()
    return terminal


async def end_chat(terminal: Terminal) -> None:
    """Ctrl-D on an empty prompt: the chat ends cleanly."""
    await terminal.type("\x04")
    assert await terminal.exit_code() == 0, terminal.tail()
    assert "Traceback" not in terminal.screen


def chat_turns(fake: FakeOllama) -> list[str]:
    """The user message of each agent turn the model was asked (title requests excluded)."""
    return [r["messages"][-1]["content"] for r in fake.chat_requests if "format" not in r]


async def note(home: Path, topic: str) -> str | None:
    db = await SqliteDatabase.open(home / "state" / "lorebot.db")
    try:
        found = await SqliteNoteStore(db).fetch(ALICE, topic)
    finally:
        await db.close()
    return None if found is None else found.summary


# --- at a terminal --------------------------------------------------------------------------


async def test_a_question_is_answered_in_plain_text_and_ctrl_d_ends_the_chat(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    fake_ollama.reply(
        "**Staging** is *pg-stage-2*, _not_ ~prod~: see <https://wiki.example/db|the runbook>, "
        "ask <@U123> in <#C9|ops>. R&amp;D keeps `a*b*c_d` as written."
    )
    chat = await start_chat(chats, tmp_path, fake_ollama)

    await chat.type("where is staging?\r")

    await chat.expect(
        "lorebot> Staging is pg-stage-2, not prod: see the runbook (https://wiki.example/db), "
        "ask @U123 in #ops. R&D keeps `a*b*c_d` as written.\n"
    )
    assert chat_turns(fake_ollama)[-1].endswith("where is staging?")
    await chat.prompt()
    await end_chat(chat)
    history = tmp_path / "state" / "chat-history"
    assert history.stat().st_mode & 0o777 == 0o600
    assert "+where is staging?" in history.read_text().splitlines()


async def test_ctrl_c_clears_the_line_and_the_chat_goes_on(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    fake_ollama.reply("It is pg-stage-2.")
    chat = await start_chat(chats, tmp_path, fake_ollama)

    await chat.type("forget everything about")
    await chat.expect("forget everything about")
    await chat.type("\x03")
    await chat.type("where is staging?\r")

    await chat.expect("lorebot> It is pg-stage-2.")
    assert [turn.rsplit("\n", 1)[-1] for turn in chat_turns(fake_ollama)] == ["where is staging?"]
    await chat.type("\x03")  # on an empty prompt: nothing happens
    await chat.prompt()
    await end_chat(chat)


async def test_ctrl_c_while_the_bot_answers_returns_to_the_prompt(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    chat = await start_chat(chats, tmp_path, fake_ollama)
    asked = len(fake_ollama.chat_requests)
    fake_ollama.delay(600)

    await chat.type("what takes so long?\r")
    await fake_ollama.wait_for_requests(asked + 1, within=EXPECT_S)
    await chat.type("\x03")

    await chat.expect("(stopped waiting; the answer will appear here when it is ready)")
    await chat.say("y")
    await chat.expect("no open card to answer")
    await fake_ollama.down()  # the slow answer fails: it still arrives, above the prompt
    await chat.expect("lorebot> ")
    await chat.prompt()
    await end_chat(chat)


def long_line(length: int) -> str:
    return " ".join(f"w{n:04d}" for n in range(length // 5))[: length - 1] + "?"


async def test_lines_of_3000_and_5000_characters_reach_the_model_whole(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    # A terminal's line mode keeps at most 4,095 characters of a line; the prompt reads
    # keys one by one, so a pasted log of any length arrives whole.
    fake_ollama.reply("That was long.")
    fake_ollama.reply("That was longer.")
    chat = await start_chat(chats, tmp_path, fake_ollama)

    await chat.type(long_line(3000) + "\r")
    await chat.expect("lorebot> That was long.")
    await chat.say(long_line(5000))

    await chat.expect("lorebot> That was longer.")
    turns = chat_turns(fake_ollama)
    assert turns[0].endswith(long_line(3000)) and turns[1].endswith(long_line(5000))
    assert len(long_line(3000)) == 3000 and len(long_line(5000)) == 5000
    await chat.prompt()
    await end_chat(chat)


async def test_a_card_is_approved_by_its_number(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    fake_ollama.reply(TITLE)
    chat = await start_chat(chats, tmp_path, fake_ollama)

    await chat.type("remember that the staging DB is pg-stage-2\r")
    await chat.expect("lorebot> 📝 Save this note? (proposal #1)")
    await chat.expect("answer: y = ✅ approve, n = ❌ discard (y 1 or n 1 answers this card")
    await chat.say("y 99")
    await chat.expect("no open card #99; open cards: #1 (answer one with y 1 or n 1)")
    await chat.say("y 1")

    await chat.expect("lorebot (card updated)> ✅ Saved `staging-db` in your notes")
    await chat.prompt()
    await end_chat(chat)
    assert await note(tmp_path, "staging-db") == "the staging DB is pg-stage-2"


async def test_a_card_left_open_is_answered_in_the_next_chat(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    fake_ollama.reply(TITLE)
    first = await start_chat(chats, tmp_path, fake_ollama)
    await first.type("remember that the staging DB is pg-stage-2\r")
    await first.expect("(proposal #1)")
    await first.prompt()
    await end_chat(first)

    second = await start_chat(chats, tmp_path, fake_ollama)
    await second.expect("open cards: #1 save `staging-db`", anywhere=True)
    await second.type("y\r")  # the card is not of this chat: only its number answers it
    await second.expect("no card from this chat to answer; open cards: #1")
    await second.say("y 1")

    await second.expect("lorebot (card updated)> ✅ Saved `staging-db`")
    await second.prompt()
    await end_chat(second)
    assert await note(tmp_path, "staging-db") == "the staging DB is pg-stage-2"


async def test_a_stray_y_says_there_is_no_open_card_and_asks_the_model_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    fake_ollama.reply("Hello, Alice.")
    chat = await start_chat(chats, tmp_path, fake_ollama)

    await chat.type("y\r")
    await chat.expect("no open card to answer")
    await chat.say("hello")

    await chat.expect("lorebot> Hello, Alice.")
    assert [turn.rsplit("\n", 1)[-1] for turn in chat_turns(fake_ollama)] == ["hello"]
    await chat.prompt()
    await end_chat(chat)


# --- piped ----------------------------------------------------------------------------------


async def piped_chat(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], script: str
) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    assert await asyncio.to_thread(main, ["chat", "--user", "alice"]) == 0
    return capsys.readouterr().out


async def test_piped_chat_answers_cards_by_number_also_from_an_earlier_chat(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    for topic in ("lunch-place", "standup-time"):
        fake_ollama.reply(json.dumps({"topic": topic, "summary": topic.replace("-", " ")}))
    out = await piped_chat(
        monkeypatch,
        capsys,
        "remember that lunch is at Rosa's\nremember that standup is at 10\nn 1\ny 5\n",
    )
    assert "❌ Discarded (proposal #1)" in out
    assert "    no open card #5; open cards: #2 (answer one with y 2 or n 2)" in out

    out = await piped_chat(monkeypatch, capsys, "y\nyes 2\n")

    assert out.startswith(
        "    open cards: #2 save `standup-time`\n    answer one with y 2 or n 2\n"
    )
    assert "    no card from this chat to answer; open cards: #2" in out
    assert "✅ Saved `standup-time` in your notes" in out
    assert len(chat_turns(fake_ollama)) == 0  # no answer went to the model


async def test_piped_yes_without_an_open_card_is_still_a_message(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    fake_ollama.reply("Glad to hear it.")

    out = await piped_chat(monkeypatch, capsys, "y\nyes\n")

    assert out == "    no open card to answer\nlorebot> Glad to hear it.\n"
    assert chat_turns(fake_ollama)[-1].endswith("yes")


async def test_a_card_of_someone_else_stays_open_and_says_why(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    fake_ollama.reply(TITLE)
    monkeypatch.setattr("sys.stdin", io.StringIO("remember that the staging DB is pg-stage-2\n"))
    assert await asyncio.to_thread(main, ["chat", "--user", "bob", "--channel", "ops"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("y 1\n"))

    assert await asyncio.to_thread(main, ["chat", "--user", "carol", "--channel", "ops"]) == 0

    out = capsys.readouterr().out
    assert "open cards: #1 save `staging-db`" in out
    assert "card #1 is still open: only the person who asked for it, or an admin" in out


# --- plain text -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("core", "shown"),
    [
        ("use snake_case_name, 2*3*4 and a_b", "use snake_case_name, 2*3*4 and a_b"),
        ("# Steps\n* first\n+ second\n- third", "Steps\n- first\n- second\n- third"),
        ("__bold__ and ~~gone~~ and *one*", "bold and gone and one"),
        ("[the wiki](https://w.example/x)", "the wiki (https://w.example/x)"),
        ("<mailto:a@b.example|a@b.example> <https://x.example>", "a@b.example https://x.example"),
        ("<!here> <@U1|ann> <#C1> <!subteam^S1|@ops>", "@here @ann #C1 @ops"),
        ("a &lt;b&gt; &amp; c, <your-token> stays", "a <b> & c, <your-token> stays"),
        (
            "```\n*keep* <@U1> **as is**\n``` then **not**",
            "```\n*keep* <@U1> **as is**\n``` then not",
        ),
    ],
)
def test_replies_are_shown_as_plain_text(core: str, shown: str) -> None:
    assert plain_text(core) == shown
