"""`/lorebot` on Discord: the command group synced to a server or globally, each invocation
acknowledged at once and handed on as a `SlashCommand`, answers only its person sees;
through discord.py's real app_commands against the fake Discord."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.base import APPROVE, REJECT, Event, Message, SlashCommand
from adapters.discord.adapter import UNKNOWN_CHANNEL, DiscordAdapter
from bot.core.commands import SLASH_HELP
from bot.daemon.app import Bot
from memory import Scope
from tests.fakes.discord import (
    ALICE,
    APPLICATION_ID,
    BOT,
    CHANNEL_ID,
    GUILD_ID,
    JOINED_THREAD_ID,
    TOKEN,
    Callback,
    FakeDiscord,
    FollowUp,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.discord import Running, adapter_for, mention
from tests.support.harness import make_settings

DEFERRED_EPHEMERAL = (5, 64)  # "lorebot is thinking…", seen only by the person
SUBCOMMANDS = ["remember", "forget", "recall", "undo", "approve", "decline", "help"]


@dataclass
class Started:
    adapter: DiscordAdapter
    discord: FakeDiscord
    events: list[Event]
    acknowledged: list[list[Callback]]  # the callbacks made before each event reached the sink

    async def command(self, subcommand: str, **kwargs: Any) -> SlashCommand:
        """Invoke `/lorebot <subcommand>`; the `SlashCommand` the sink got for it."""
        count = len(self.events)
        await self.discord.slash_command(subcommand, **kwargs)
        await self.discord.wait_until(lambda: len(self.events) > count)
        event = self.events[-1]
        assert isinstance(event, SlashCommand)
        return event


Start = Callable[..., Awaitable[Started]]


@pytest.fixture
async def start(fake_discord: FakeDiscord) -> AsyncIterator[Start]:
    adapters: list[DiscordAdapter] = []

    async def started(command_guild_id: int | None = GUILD_ID) -> Started:
        events: list[Event] = []
        acknowledged: list[list[Callback]] = []

        async def sink(event: Event) -> None:
            acknowledged.append(list(fake_discord.callbacks))
            events.append(event)

        adapter = DiscordAdapter(
            token=TOKEN,
            api_base_url=fake_discord.api_base_url,
            gateway_url=fake_discord.gateway_url,
            ready_timeout=5.0,
            guild_ready_timeout=0.05,
            command_guild_id=command_guild_id,
        )
        adapters.append(adapter)
        await adapter.start(sink)
        await fake_discord.wait_until(lambda: fake_discord.requests_to("PUT", "/applications/"))
        return Started(adapter, fake_discord, events, acknowledged)

    try:
        yield started
    finally:
        for adapter in adapters:
            await adapter.close()


# --- syncing --------------------------------------------------------------------------


async def test_the_lorebot_group_is_synced_to_the_configured_server_at_start(
    start: Start,
) -> None:
    run = await start(command_guild_id=GUILD_ID)
    [sync] = run.discord.command_syncs
    assert sync.guild_id == GUILD_ID
    assert run.discord.requests_to("PUT", f"/applications/{APPLICATION_ID}/commands") == []
    [group] = sync.commands
    assert group["name"] == "lorebot" and group["type"] == 1
    subcommands = {option["name"]: option for option in group["options"]}
    assert list(subcommands) == SUBCOMMANDS
    assert all(option["type"] == 1 for option in subcommands.values())  # SUB_COMMAND
    arguments = {
        name: [(o["name"], o["type"], o["required"]) for o in option.get("options", [])]
        for name, option in subcommands.items()
    }
    assert arguments == {
        "remember": [("text", 3, True)],
        "forget": [("what", 3, True)],
        "recall": [("about", 3, False)],
        "undo": [],
        "approve": [("card", 4, True)],
        "decline": [("card", 4, True)],
        "help": [],
    }


async def test_without_a_command_server_the_group_is_synced_globally(start: Start) -> None:
    run = await start(command_guild_id=None)
    [sync] = run.discord.command_syncs
    assert sync.guild_id is None
    assert [c["name"] for c in sync.commands] == ["lorebot"]
    assert run.discord.requests_to("PUT", f"/applications/{APPLICATION_ID}/guilds") == []
    event = await run.command("undo")  # a global command's interaction has no data.guild_id
    assert event.text == "undo"


async def test_setting_a_command_server_removes_the_global_lorebot_of_an_earlier_start(
    start: Start, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    """Else that server shows `/lorebot` twice: its own and the global one."""
    caplog.set_level(logging.INFO)
    earlier = await start(command_guild_id=None)
    await earlier.adapter.close()
    foreign = {
        **fake_discord.registered[None][0],
        "id": "77",
        "name": "deploy",
        "description": "another program's command",
        "options": [],
    }
    fake_discord.registered[None].append(foreign)  # another global command of the app

    run = await start(command_guild_id=GUILD_ID)
    removed = f"removed the global /lorebot commands: server {GUILD_ID} has its own now"
    await fake_discord.wait_until(lambda: removed in caplog.messages)
    assert fake_discord.registered[None] == [foreign]
    assert [c["name"] for c in fake_discord.registered[GUILD_ID]] == ["lorebot"]
    event = await run.command("undo")  # the server's copy still answers
    assert event.text == "undo"


async def test_with_no_global_lorebot_left_a_command_server_deletes_nothing(
    start: Start, fake_discord: FakeDiscord
) -> None:
    await start(command_guild_id=GUILD_ID)
    await fake_discord.wait_until(
        lambda: fake_discord.requests_to("GET", f"/applications/{APPLICATION_ID}/commands")
    )
    assert fake_discord.requests_to("DELETE", "/applications/") == []


async def test_a_refused_sync_is_logged_once_with_the_fix_and_the_bot_keeps_running(
    start: Start, fake_discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    fake_discord.refuse_command_sync()
    run = await start(command_guild_id=GUILD_ID)
    await fake_discord.wait_until(lambda: any("/lorebot" in r.getMessage() for r in caplog.records))

    [line] = [r for r in caplog.records if "/lorebot" in r.getMessage()]
    assert line.levelno == logging.WARNING and line.exc_info is None
    message = line.getMessage()
    assert message.startswith(
        f"Discord refused to register the /lorebot commands in server {GUILD_ID} "
        "(HTTP 403, code 50001): re-invite lorebot with the applications.commands scope: "
        f"https://discord.com/oauth2/authorize?client_id={APPLICATION_ID}"
        "&scope=bot+applications.commands&permissions=274877975616"
    )
    assert "LOREBOT_DISCORD__COMMAND_GUILD_ID" in message and "\n" not in message

    assert run.adapter.connected
    await fake_discord.send_message(f"{mention(BOT.id)} still there?", mentions=[BOT])
    await fake_discord.wait_until(lambda: run.events)
    [question] = run.events
    assert isinstance(question, Message) and question.text == "still there?"
    assert len(fake_discord.command_syncs) == 0  # refused, and not tried again
    assert len(fake_discord.requests_to("PUT", "/applications/")) == 1


# --- invoking ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("subcommand", "options", "text"),
    [
        ("remember", {"text": "deploys happen on Tuesdays"}, "remember deploys happen on Tuesdays"),
        ("forget", {"what": "deploy day"}, "forget deploy day"),
        ("recall", {"about": "deploys"}, "recall deploys"),
        ("recall", {}, "recall"),
        ("undo", {}, "undo"),
        ("help", {}, "help"),
    ],
)
async def test_each_subcommand_arrives_as_a_slash_command_after_an_ephemeral_defer(
    start: Start, subcommand: str, options: dict[str, str], text: str
) -> None:
    run = await start()
    payload = await run.discord.slash_command(subcommand, **options)
    await run.discord.wait_until(lambda: run.events)

    [event] = run.events
    assert isinstance(event, SlashCommand)
    assert event.text == text
    [[callback]] = run.acknowledged  # deferred before the sink got the command
    assert callback.interaction_id == int(payload["id"])
    assert (callback.type, callback.flags) == DEFERRED_EPHEMERAL
    assert event.conversation.channel_id == str(CHANNEL_ID)
    assert event.conversation.team_id == str(GUILD_ID)
    assert not event.conversation.is_dm and event.conversation.reply_to is None
    assert (event.author.id, event.author.name, event.author.is_bot) == (
        str(ALICE.id),
        ALICE.display_name,
        False,
    )
    assert event.message_id == "" and event.mentions_bot
    assert event.event_id == f"interaction:{payload['id']}"


async def test_a_command_in_a_dm_or_a_thread_belongs_to_that_conversation(
    start: Start,
) -> None:
    run = await start()
    in_dm = await run.command("recall", dm=True)
    assert in_dm.conversation.is_dm and in_dm.conversation.team_id is None
    assert in_dm.conversation.channel_id == str(ALICE.dm_channel_id)
    assert in_dm.author.id == str(ALICE.id)

    in_thread = await run.command("undo", channel_id=JOINED_THREAD_ID)
    assert in_thread.conversation.channel_id == str(JOINED_THREAD_ID)
    assert not in_thread.conversation.is_dm


async def test_answer_is_an_ephemeral_follow_up_clipped_to_one_message(start: Start) -> None:
    run = await start()
    event = await run.command("recall", about="deploys")
    await event.answer("Deploys happen on Tuesdays.")
    await event.answer("word " * 500)

    interaction_id = int(event.event_id.removeprefix("interaction:"))
    short, long = run.discord.followups
    assert short == FollowUp(interaction_id, "Deploys happen on Tuesdays.", 64)
    assert long.flags == 64 and len(long.content) <= 2000 and long.content.endswith("…")
    # sent with the interaction's token, not the bot token
    [followup, _] = run.discord.requests_to("POST", f"/webhooks/{APPLICATION_ID}/")
    assert followup.authorization is None


async def test_a_command_that_cannot_be_acknowledged_is_logged_and_dropped(
    start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    run = await start()
    stale = run.discord.interaction_payload("undo")  # its token is unknown to Discord
    await run.discord.dispatch("INTERACTION_CREATE", stale)
    callbacks = f"/interactions/{stale['id']}/"
    await run.discord.wait_until(lambda: run.discord.requests_to("POST", callbacks))
    await run.discord.wait_until(
        lambda: [r for r in caplog.records if r.name == "adapters.discord.adapter"]
    )

    assert (await run.command("help")).text == "help"  # the next one works

    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.name == "adapters.discord.adapter" and line.exc_info is None
    assert line.getMessage() == (
        "Discord refused to acknowledge a /lorebot command (HTTP 404, code 10062): the "
        "command was not acknowledged within Discord's 3 seconds"
    )
    assert [e.text for e in run.events if isinstance(e, SlashCommand)] == ["help"]
    assert len(run.events) == 1


async def test_a_command_from_a_channel_discord_py_cannot_read_is_answered(
    start: Start,
) -> None:
    run = await start()
    await run.discord.slash_command("help", channel_id=1100000000000000099, channel_type=99)
    [answer] = await run.discord.wait_until(lambda: run.discord.followups)
    assert (answer.content, answer.flags) == (UNKNOWN_CHANNEL, 64)
    assert run.events == []


# --- through the bot ----------------------------------------------------------------------


@pytest.fixture
async def running(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Running]:
    adapter = adapter_for(fake_discord)
    bot = Bot(make_settings(tmp_path / "bot.db", fake_ollama.url), [adapter], clock=clock)
    await bot.start()
    try:
        yield Running(bot, adapter, fake_discord, fake_ollama)
    finally:
        await bot.stop()


async def test_slash_help_is_answered_to_the_person_alone(running: Running) -> None:
    await running.discord.wait_until(lambda: running.discord.command_syncs)
    await running.discord.slash_command("help")
    [answer] = await running.discord.wait_until(lambda: running.discord.followups)
    assert (answer.content, answer.flags) == (SLASH_HELP, 64)
    [callback] = running.discord.callbacks
    assert (callback.type, callback.flags) == DEFERRED_EPHEMERAL
    await running.bot.dispatcher.wait_idle()
    assert running.discord.posted == []  # nothing in the channel


async def test_slash_remember_posts_a_card_that_the_persons_reaction_decides(
    running: Running,
) -> None:
    running.ollama.reply(json.dumps({"topic": "deploy-day", "summary": "deploys on tuesday"}))
    await running.discord.slash_command("remember", text="deploys happen on Tuesdays")
    [card] = await running.discord.wait_for_posts(1)
    await running.discord.wait_until(lambda: len(card.reactions) == 2)
    [answer] = await running.discord.wait_until(lambda: running.discord.followups)

    assert card.channel_id == CHANNEL_ID and card.reactions == [APPROVE, REJECT]
    assert "message_reference" not in card.body  # a command is no message to reply to
    assert answer.flags == 64 and answer.content.startswith("I posted card #")

    await running.discord.react(card.id, APPROVE, user=ALICE)
    await running.discord.wait_until(lambda: card.edits)
    note = await running.bot.notes.fetch(Scope.parse(f"channel:discord/{CHANNEL_ID}"), "deploy-day")
    assert note is not None and note.body == "deploys happen on Tuesdays"
