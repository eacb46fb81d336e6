"""`/lorebot` in Slack: acknowledged at once, handed to the core as a `SlashCommand`, and
answered to the person alone, over Socket Mode and over HTTP, through the real slack-bolt
against the fake Slack."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adapters.base import Event, SlashCommand
from adapters.slack.adapter import SlackAdapter
from bot.core.commands import SLASH_HELP
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    ALL_SCOPES,
    Body,
    FakeSlack,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
    post_form,
)
from tests.support.clock import FakeClock
from tests.support.slack import SECRET, Running, start_bot

HTTP = {"app_token": None, "signing_secret": SECRET, "listen": "127.0.0.1:0"}


@dataclass
class Sink:
    """Events as the core would get them; holds each one until `release` is set."""

    events: list[Event] = field(default_factory=list)
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, event: Event) -> None:
        self.events.append(event)
        self.entered.set()
        await self.release.wait()


@dataclass
class Started:
    """An adapter started in one of Slack's two modes, and its sink."""

    adapter: SlackAdapter
    sink: Sink


@pytest.fixture(params=["socket", "http"])
async def started(request: pytest.FixtureRequest, fake_slack: FakeSlack) -> AsyncIterator[Started]:
    options = HTTP if request.param == "http" else {"app_token": fake_slack.app_token}
    slack = SlackAdapter(bot_token=fake_slack.bot_token, api_base_url=fake_slack.api_url, **options)
    sink = Sink()
    await slack.start(sink)
    try:
        yield Started(slack, sink)
    finally:
        sink.release.set()
        await slack.close()


async def received(started: Started) -> SlashCommand:
    """The one command the sink got."""
    async with asyncio.timeout(5):
        await started.sink.entered.wait()
    [event] = started.sink.events
    assert isinstance(event, SlashCommand)
    return event


async def deliver(slack: SlackAdapter, fake: FakeSlack, command: Body) -> None:
    """Send the command as Slack does in the adapter's mode; return once Slack got the ack."""
    if slack.bound_address is None:
        await fake.push(command, envelope_type="slash_commands", within=2.0)
        return
    url = f"http://127.0.0.1:{slack.bound_address[1]}{slack.events_path}"
    async with asyncio.timeout(2.0):
        assert await post_form(url, command, SECRET) == 200


async def test_a_command_is_acknowledged_before_any_work_and_reaches_the_core(
    started: Started, fake_slack: FakeSlack
) -> None:
    names = fake_slack.hold("users.info")  # the author's name is looked up after the ack
    command = fake_slack.slash_command("recall deploys & <@UBOB>", user="UALICE", channel="C5")

    await deliver(started.adapter, fake_slack, command)

    assert started.sink.events == []
    names.set()
    event = await received(started)
    conversation = event.conversation
    assert (conversation.platform, conversation.channel_id) == ("slack", "C5")
    assert (conversation.is_dm, conversation.thread_id, conversation.team_id) == (False, None, "T1")
    assert (event.author.id, event.author.name, event.author.is_bot) == ("UALICE", "alice", False)
    assert event.text == "recall deploys & @bob"
    assert event.event_id == f"command:{command['trigger_id']}"
    assert event.message_id == command["trigger_id"] and event.mentions_bot


async def test_a_command_in_a_dm_is_a_dm_command(started: Started, fake_slack: FakeSlack) -> None:
    await deliver(started.adapter, fake_slack, fake_slack.slash_command("undo", channel="D9"))
    event = await received(started)
    assert event.conversation.is_dm and event.conversation.channel_id == "D9"


async def test_the_answer_reaches_the_person_alone_as_mrkdwn(
    started: Started, fake_slack: FakeSlack
) -> None:
    await deliver(started.adapter, fake_slack, fake_slack.slash_command("recall", user="UBOB"))
    event = await received(started)

    await event.answer("Your notes: **vpn** & <!channel>")

    [answer] = fake_slack.ephemerals
    assert (answer.user, answer.channel, answer.via) == ("UBOB", "C1", "url")
    assert answer.body["response_type"] == "ephemeral"
    assert answer.text == "Your notes: *vpn* &amp; &lt;!channel&gt;"
    assert fake_slack.posts == []


async def test_without_a_response_url_the_answer_is_posted_ephemerally(
    started: Started, fake_slack: FakeSlack
) -> None:
    command = fake_slack.slash_command("recall", user="UBOB", channel="C3", response_url=False)
    await deliver(started.adapter, fake_slack, command)
    event = await received(started)

    await event.answer("Nothing & nobody.")

    [answer] = fake_slack.ephemerals
    assert (answer.user, answer.channel, answer.via) == ("UBOB", "C3", "api")
    assert answer.text == "Nothing &amp; nobody."
    assert fake_slack.posts == []


async def test_a_refused_response_url_falls_back_to_an_ephemeral_post(
    started: Started, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    command = fake_slack.slash_command("recall", user="UBOB", channel="C3")
    command["response_url"] = f"{fake_slack.url}/respond/expired"
    await deliver(started.adapter, fake_slack, command)
    event = await received(started)

    await event.answer("Nothing yet.")

    [answer] = fake_slack.ephemerals
    assert (answer.user, answer.channel, answer.via, answer.text) == (
        "UBOB",
        "C3",
        "api",
        "Nothing yet.",
    )
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "response_url" in warning.getMessage() and "404" in warning.getMessage()


async def test_a_missing_commands_scope_is_named_at_start(
    fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake_slack.scopes = ALL_SCOPES.replace("commands,", "")
    slack = SlackAdapter(
        bot_token=fake_slack.bot_token,
        app_token=fake_slack.app_token,
        api_base_url=fake_slack.api_url,
    )
    with caplog.at_level(logging.WARNING, logger="adapters.slack.connection"):
        await slack.start(Sink())
        await slack.close()
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "lacks the scopes commands:" in warning


# --- through the bot --------------------------------------------------------------------------


@pytest.fixture(params=["socket", "http"])
async def bot(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    clock: FakeClock,
) -> AsyncIterator[Running]:
    options = HTTP if request.param == "http" else {}
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock, **options)
    try:
        yield run
    finally:
        await run.bot.stop()


async def test_lorebot_help_is_answered_to_the_person_alone(bot: Running) -> None:
    slack = bot.slack
    await deliver(bot.adapter, slack, slack.slash_command("help", user="UALICE", channel="C1"))
    await bot.settle()

    [answer] = slack.ephemerals
    assert (answer.user, answer.channel) == ("UALICE", "C1")
    assert answer.text.startswith("`/lorebot remember &lt;fact&gt;`")
    assert answer.text.count("/lorebot") == SLASH_HELP.count("/lorebot")
    assert slack.posts == [] and bot.ollama.chat_requests == []


async def test_a_repeated_command_delivery_is_answered_once(bot: Running) -> None:
    slack = bot.slack
    command = slack.slash_command("help")
    await deliver(bot.adapter, slack, command)
    await deliver(bot.adapter, slack, command)
    await bot.settle()
    assert len(slack.ephemerals) == 1


@pytest.mark.parametrize(
    ("channel", "error", "told"),
    [
        # A DM between two people: Slack sends the command, but lorebot cannot post there.
        (
            "D0PEOPLE",
            "channel_not_found",
            "I cannot post in this conversation, so nothing "
            "was proposed: use /lorebot in a DM with me or in a channel I am in.",
        ),
        (
            "C2",
            "not_in_channel",
            "I could not post the card here, so nothing was proposed: "
            "Slack chat.postMessage failed (not_in_channel): @lorebot is not a member of "
            "channel C2: invite it there with /invite @lorebot",
        ),
    ],
)
async def test_a_card_that_cannot_be_posted_is_explained_to_the_person_and_closed(
    bot: Running, channel: str, error: str, told: str
) -> None:
    slack = bot.slack
    bot.title("deploy-freeze", "the deploy freeze starts on Friday")
    slack.fail("chat.postMessage", error)
    command = slack.slash_command("remember the deploy freeze starts on Friday", channel=channel)
    await deliver(bot.adapter, slack, command)
    await bot.settle()

    [answer] = slack.ephemerals
    assert answer.user == "UALICE" and answer.text == f"⚠️ {told}"
    assert slack.posts == []
    [proposal] = await bot.bot.proposals.fetch_recent()
    assert proposal.status == "failed" and proposal.decided_by == "lorebot"
    assert proposal.outcome.startswith(
        f"its card could not be posted: Slack chat.postMessage failed ({error})"
    )
