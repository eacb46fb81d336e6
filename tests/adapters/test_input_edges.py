"""Hostile or broken input at the chat edges: invalid Unicode from Slack, Discord and piped
stdin, and Slack messages full of mentions.

Slack runs through real slack-bolt against the fake Slack, Discord through discord.py's real
gateway parsing against the fake Discord, and the console through `lorebot chat` itself.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.slack.adapter import MAX_LOOKUPS_PER_MESSAGE
from bot.cli.main import main
from bot.daemon.app import Bot
from memory import Scope, Viewer, visibility_for
from tests.fakes.discord import (
    ALICE,
    BOT,
    CHANNEL_ID,
    FakeDiscord,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    FakeSlack,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
)
from tests.support.clock import FakeClock
from tests.support.discord import adapter_for
from tests.support.harness import make_settings
from tests.support.slack import Running, start_bot

REPLACEMENT = "\ufffd"


@pytest.fixture
async def slack(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> AsyncIterator[Running]:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock)
    try:
        yield run
    finally:
        await run.bot.stop()


def chat_turns(ollama: FakeOllama) -> list[str]:
    """The user message of each agent turn the model was asked (title requests excluded)."""
    return [r["messages"][-1]["content"] for r in ollama.chat_requests if "format" not in r]


# --- invalid Unicode ------------------------------------------------------------------------


async def test_a_slack_message_with_a_lone_surrogate_gets_a_normal_reply(slack: Running) -> None:
    fake = slack.slack
    fake.users["UMALLORY"] = "mal\ud800lory"  # a display name Slack sends as "\ud800"
    slack.ollama.reply("Noted, the cut emoji is harmless.")

    # The fake sends JSON with ensure_ascii, so the text arrives as the escape "\ud800".
    await slack.push(
        fake.app_mention("<@UBOT> the deploy emoji got cut \ud800 here", user="UMALLORY")
    )

    [post] = fake.posts
    assert post.text == "Noted, the cut emoji is harmless."
    assert chat_turns(slack.ollama)[-1].endswith(f"the deploy emoji got cut {REPLACEMENT} here")
    here = visibility_for(
        Viewer(Scope.parse("user:slack/UMALLORY"), Scope.parse("channel:slack/C1"))
    )
    [question, _reply] = await slack.bot.log.search("deploy emoji", here, k=2)
    assert question.content == f"the deploy emoji got cut {REPLACEMENT} here"
    assert question.author_name == f"mal{REPLACEMENT}lory"


async def test_a_discord_message_with_a_lone_surrogate_gets_a_normal_reply(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    bot = Bot(
        make_settings(tmp_path / "bot.db", fake_ollama.url),
        [adapter_for(fake_discord)],
        clock=clock,
    )
    await bot.start()
    try:
        fake_ollama.reply("Got it.")
        await fake_discord.send_message(f"<@{BOT.id}> half an emoji \udc00 here", mentions=[BOT])
        [reply] = await fake_discord.wait_for_posts(1)
        assert reply.content == "Got it."
        assert chat_turns(fake_ollama)[-1].endswith(f"half an emoji {REPLACEMENT} here")
        here = visibility_for(
            Viewer(
                Scope.parse(f"user:discord/{ALICE.id}"),
                Scope.parse(f"channel:discord/{CHANNEL_ID}"),
            )
        )
        [question, _reply] = await bot.log.search("half an emoji", here, k=2)
        assert question.content == f"half an emoji {REPLACEMENT} here"
    finally:
        await bot.stop()


@pytest.mark.parametrize("errors", ["surrogateescape", "strict"])
async def test_piped_chat_reads_a_line_with_a_byte_that_is_not_utf8(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    errors: str,
) -> None:
    # What `printf 'hello \xff\n' | lorebot chat` hands Python: under the C locale stdin
    # decodes with surrogateescape ('\udcff'); under a UTF-8 locale it is strict.
    stdin = io.TextIOWrapper(
        io.BytesIO(b"hello \xff there\nand a second line\n"), encoding="utf-8", errors=errors
    )
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    fake_ollama.reply("Hello to you.")
    fake_ollama.reply("Second answer.")

    code = await asyncio.to_thread(main, ["chat", "--user", "alice"])

    out, err = capsys.readouterr()
    assert code == 0
    assert "lorebot> Hello to you." in out and "lorebot> Second answer." in out
    assert "went wrong" not in out and "Traceback" not in err
    assert chat_turns(fake_ollama)[-2].endswith(f"hello {REPLACEMENT} there")


# --- mention amplification ----------------------------------------------------------------


async def test_a_message_with_thousands_of_mentions_makes_a_bounded_number_of_lookups(
    slack: Running,
) -> None:
    fake = slack.slack
    crowd = [f"U{n:06d}" for n in range(2500)]
    fake.users.update({user: f"person{n}" for n, user in enumerate(crowd)})
    slack.ollama.reply("That is a lot of people.")
    text = "<@UBOT> ping <@UBOB> " + " ".join(f"<@{user}>" for user in crowd)

    await slack.push(fake.app_mention(text))

    lookups = [call["user"] for call in fake.calls_to("users.info")]
    assert len(lookups) <= 1 + MAX_LOOKUPS_PER_MESSAGE  # the author and the first few
    assert len(lookups) == len(set(lookups))
    assert fake.posts[-1].text == "That is a lot of people."
    question = chat_turns(slack.ollama)[-1]
    assert "ping @bob @person0 @person1" in question  # the first mentions get names
    assert question.endswith(f"@{crowd[-2]} @{crowd[-1]}")  # the rest keep their ids

    # Names already looked up are cached: asking again about the same people costs nothing.
    slack.ollama.reply("Still a lot.")
    await slack.push(fake.app_mention("<@UBOT> and <@UBOB> <@U000000>?"))
    assert len(fake.calls_to("users.info")) == len(lookups)
    assert chat_turns(slack.ollama)[-1].endswith("and @bob @person0?")
