"""While the model works, people see it: Slack's thread status and Discord's typing
indicator, through the real slack-bolt and discord.py against the fakes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.base import THINKING
from bot.daemon.app import Bot
from tests.fakes.discord import (
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
from tests.support.discord import adapter_for, mention
from tests.support.harness import make_settings
from tests.support.slack import Running, start_bot

SET_STATUS = "assistant.threads.setStatus"


@pytest.fixture
async def slack_bot(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> AsyncIterator[Running]:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock)
    try:
        yield run
    finally:
        await run.bot.stop()


@pytest.fixture
async def discord_bot(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Bot]:
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url)
    bot = Bot(settings, [adapter_for(fake_discord)], clock=clock)
    await bot.start()
    try:
        yield bot
    finally:
        await bot.stop()


def status_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if SET_STATUS in r.getMessage()]


# --- Slack ------------------------------------------------------------------------------


async def test_slack_shows_is_thinking_in_the_thread_before_the_models_reply(
    slack_bot: Running,
) -> None:
    slack = slack_bot.slack
    await slack_bot.push(slack.app_mention("<@UBOT> help"))
    assert slack.calls_to(SET_STATUS) == []  # a command answered without the model

    slack_bot.ollama.reply("The staging DB is pg-stage-2.")
    body = slack.app_mention("<@UBOT> where is the staging DB?", channel="C7")
    await slack_bot.push(body)

    [status] = slack.calls_to(SET_STATUS)
    assert status["channel_id"] == "C7"
    assert status["thread_ts"] == body["event"]["ts"]
    assert status["status"] == THINKING == "is thinking…"
    methods = [call.method for call in slack.calls]
    reply_at = max(i for i, m in enumerate(methods) if m == "chat.postMessage")
    assert methods.index(SET_STATUS) < reply_at
    assert slack.posts[-1].text == "The staging DB is pg-stage-2."


@pytest.mark.parametrize("error", ["not_allowed", "missing_scope", "unknown_method"])
async def test_a_refused_slack_status_is_logged_once_and_replies_still_arrive(
    slack_bot: Running, caplog: pytest.LogCaptureFixture, error: str
) -> None:
    slack = slack_bot.slack
    slack.fail(SET_STATUS, error)
    caplog.set_level(logging.INFO)
    for question in ("where is the wiki?", "and the runbook?"):
        slack_bot.ollama.reply(f"Answer to: {question}")
        await slack_bot.push(slack.app_mention(f"<@UBOT> {question}"))

    assert [p.text for p in slack.posts] == [
        "Answer to: where is the wiki?",
        "Answer to: and the runbook?",
    ]
    assert len(slack.calls_to(SET_STATUS)) == 1  # not asked again after the refusal
    [line] = status_lines(caplog)
    assert error in line and "\n" not in line
    assert [r.levelno for r in caplog.records if SET_STATUS in r.getMessage()] == [logging.INFO]


# --- Discord ----------------------------------------------------------------------------


async def test_discord_shows_typing_in_the_channel_before_the_models_reply(
    discord_bot: Bot, fake_discord: FakeDiscord, fake_ollama: FakeOllama
) -> None:
    fake_ollama.reply("The VPN gateway is vpn-2.")
    await fake_discord.send_message(f"{mention(BOT.id)} which VPN gateway?", mentions=[BOT])
    [reply] = await fake_discord.wait_for_posts(1)

    assert reply.content == "The VPN gateway is vpn-2."
    paths = [(r.method, r.path) for r in fake_discord.requests]
    typing = ("POST", f"/channels/{CHANNEL_ID}/typing")
    assert typing in paths
    assert paths.index(typing) < paths.index(("POST", f"/channels/{CHANNEL_ID}/messages"))


async def test_a_refused_discord_typing_indicator_does_not_stop_the_reply(
    discord_bot: Bot, fake_discord: FakeDiscord, fake_ollama: FakeOllama
) -> None:
    fake_discord.refused_typing.add(CHANNEL_ID)
    fake_ollama.reply("The VPN gateway is vpn-2.")
    await fake_discord.send_message(f"{mention(BOT.id)} which VPN gateway?", mentions=[BOT])
    [reply] = await fake_discord.wait_for_posts(1)

    assert reply.content == "The VPN gateway is vpn-2."
    assert fake_discord.requests_to("POST", f"/channels/{CHANNEL_ID}/typing")
