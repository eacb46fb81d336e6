"""`lorebot chat` as a person uses it: the real command in a pseudo-terminal, typed into key
by key and read from the screen, against the fake Ollama; then the same card answers
through piped stdin, and the plain-text rendering of replies."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from adapters.console.text import plain_text
from bot.cli.main import main
from memory import Scope
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore
from tests.fakes.ollama import FakeOllama
from tests.support import terminal
from tests.support.terminal import EXPECT_S, Terminal, end_chat, start_chat

# The fixture, bound by assignment: an imported name used as a test argument trips ruff's F811.
chats = terminal.chats

ALICE = Scope.parse("user:console/alice")
TITLE = json.dumps({"topic": "staging-db", "summary": "the staging DB is pg-stage-2"})


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
    await terminal.until_settled(tmp_path)  # the answer is shown before the turn ends
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


async def test_an_answer_that_comes_after_ctrl_c_is_shown_whole_above_the_prompt(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    answer = " ".join(f"word{n:03d}" for n in range(60)) + " end."  # five rows of the screen
    chat = await start_chat(chats, tmp_path, fake_ollama)
    asked = len(fake_ollama.chat_requests)
    fake_ollama.reply(answer)
    fake_ollama.hold_chats()
    await chat.type("what takes so long?\r")
    await fake_ollama.wait_for_requests(asked + 1, within=EXPECT_S)
    await chat.type("\x03")
    await chat.expect("(stopped waiting; the answer will appear here when it is ready)")
    typed = "and then " * 15  # the next line, half typed: the prompt takes two rows
    await chat.prompt()
    await chat.type(typed)
    await chat.expect(typed[-20:])

    fake_ollama.release_chats()

    await chat.expect("end.")
    await chat.expect(typed[-20:])  # the prompt, drawn again below the answer
    shown = "".join(chat.display)  # the rows as the terminal shows them, wrapped text joined
    assert f"lorebot> {answer}" in shown, "\n".join(chat.display)
    assert f"alice> {typed}" in shown
    await chat.type("\x03")  # drops the half-typed line: a new, empty prompt comes below it
    await chat.until_shown(lambda rows: rows[-2].endswith("and then") and rows[-1] == "alice>")
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


async def test_lorebot_is_thinking_shows_while_the_model_works_and_goes_with_the_answer(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    fake_ollama.reply("It is pg-stage-2.")
    chat = await start_chat(chats, tmp_path, fake_ollama)
    fake_ollama.hold_chats()

    await chat.type("where is staging?\r")

    await chat.expect("lorebot is thinking…")
    fake_ollama.release_chats()
    await chat.expect("lorebot> It is pg-stage-2.")
    await chat.prompt()
    shown = chat.display
    assert not any("thinking" in row for row in shown), "\n".join(shown)
    assert any(row.startswith("lorebot> It is pg-stage-2.") for row in shown)
    await end_chat(chat)


async def test_slash_quit_ends_the_chat_and_asks_the_model_nothing(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    chat = await start_chat(chats, tmp_path, fake_ollama)

    await chat.type("/quit\r")

    assert await chat.exit_code() == 0, chat.tail()
    assert "skill" not in chat.screen and "Traceback" not in chat.screen
    assert chat_turns(fake_ollama) == []


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


@pytest.mark.parametrize("word", ["/quit", "/exit", "quit", "Exit"])
async def test_a_quit_word_alone_on_a_line_ends_a_piped_chat(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    word: str,
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)

    out = await piped_chat(monkeypatch, capsys, f"{word}\nwhere is staging?\n")

    assert out == ""
    assert chat_turns(fake_ollama) == []


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
