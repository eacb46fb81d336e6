"""The Discord adapter end to end: discord.py's real login, gateway and REST against a fake
Discord, the real core and storage, and the fake Ollama."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from adapters.base import APPROVE, REJECT, ConversationRef, Event, ReactionEvent, UserRef
from adapters.discord.adapter import BAD_TOKEN, MISSING_INTENT, DiscordAdapter, DiscordStartError
from bot.daemon.app import Bot
from memory import Scope, Viewer, visibility_for
from tests.fakes.discord import (
    ALICE,
    BOT,
    BOT_ROLE_ID,
    CHANNEL_ID,
    GUILD_ID,
    INTENT,
    JOINED_THREAD_ID,
    MALLORY,
    OTHER_THREAD_ID,
    TOKEN,
    FakeDiscord,
    Posted,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.discord import ALICE_SCOPE, Running, adapter_for, mention
from tests.support.harness import make_settings


@pytest.fixture
async def running(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Running]:
    adapter = adapter_for(fake_discord)
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url)
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    try:
        yield Running(bot, adapter, fake_discord, fake_ollama)
    finally:
        await bot.stop()


# --- connecting -----------------------------------------------------------------------


async def test_identify_carries_the_token_and_the_intents(running: Running) -> None:
    [identify] = running.discord.identifies
    assert identify["token"] == TOKEN
    intents = identify["intents"]
    for wanted in (
        "guilds",
        "guild_messages",
        "direct_messages",
        "message_content",
        "guild_message_reactions",
        "direct_message_reactions",
    ):
        assert intents & INTENT[wanted], wanted
    assert not intents & (INTENT["guild_members"] | INTENT["guild_presences"])
    assert all(r.authorization == f"Bot {TOKEN}" for r in running.discord.requests)
    assert running.discord.heartbeats >= 1  # sent on HELLO, and ACKed


async def test_a_bad_token_fails_the_start_with_one_clear_line(
    fake_discord: FakeDiscord,
) -> None:
    adapter = adapter_for(fake_discord, token="not-the-token")
    with pytest.raises(DiscordStartError) as failure:
        await adapter.start(_ignore)
    message = str(failure.value)
    assert message == BAD_TOKEN and "\n" not in message
    assert "not-the-token" not in message and "LOREBOT_DISCORD__TOKEN" in message
    assert fake_discord.identifies == []  # it stopped at login
    await adapter.close()  # closing after a failed start is harmless


async def test_a_missing_message_content_intent_is_reported_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeDiscord(privileged_allowed=0, application_flags=0)
    await fake.start()
    try:
        adapter = adapter_for(fake)
        with pytest.raises(DiscordStartError) as failure:
            await adapter.start(_ignore)
        assert str(failure.value) == MISSING_INTENT
        assert "Message Content Intent" in MISSING_INTENT and "developer portal" in MISSING_INTENT
        assert fake.refusals == [4014]
        assert not fake.connected
        assert any("Message Content intent looks disabled" in r.message for r in caplog.records)
    finally:
        await fake.close()


async def test_an_unreachable_gateway_fails_the_start_with_a_line_naming_it(
    fake_discord: FakeDiscord,
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    adapter = DiscordAdapter(
        token=TOKEN,
        api_base_url=fake_discord.api_base_url,
        gateway_url=f"ws://127.0.0.1:{port}/gateway",
        ready_timeout=0.3,
    )
    with pytest.raises(DiscordStartError) as failure:
        await adapter.start(_ignore)  # after discord.py gives up, or after 0.3 s
    assert f"Discord's gateway at ws://127.0.0.1:{port}/gateway" in str(failure.value)
    await adapter.close()


async def test_close_is_safe_twice_and_closes_the_gateway(running: Running) -> None:
    assert running.adapter.connected
    await running.bot.stop()
    assert not running.adapter.connected
    await running.adapter.close()
    await running.discord.wait_until(lambda: not running.discord.connected)


# --- answering ------------------------------------------------------------------------


async def test_a_mention_is_answered_with_the_models_reply_as_a_reply(running: Running) -> None:
    running.ollama.reply("The VPN gateway is vpn-2.")
    asked = await running.discord.send_message(
        f"{mention(BOT.id)}, ask {mention(MALLORY.id)} or me: which VPN gateway?",
        mentions=[BOT, MALLORY],
    )
    [reply] = await running.discord.wait_for_posts(1)

    assert reply.channel_id == CHANNEL_ID
    assert reply.content == "The VPN gateway is vpn-2."
    assert reply.body["message_reference"]["message_id"] == int(asked["id"])
    assert reply.body["message_reference"]["fail_if_not_exists"] is False
    question = running.chat_turns()[-1]["messages"][-1]["content"]
    assert question.endswith("ask @Mallory or me: which VPN gateway?")
    assert "<@" not in question


async def test_a_question_is_found_later_in_the_channels_history_with_its_discord_link(
    running: Running,
) -> None:
    running.ollama.reply("Noted.")
    asked = await running.discord.send_message(
        f"{mention(BOT.id)} the deploy freeze starts on friday at noon", mentions=[BOT]
    )
    await running.discord.wait_for_posts(1)
    here = visibility_for(
        Viewer(
            Scope.parse(f"user:discord/{asked['author']['id']}"),
            Scope.parse(f"channel:discord/{CHANNEL_ID}"),
        )
    )
    [question, reply] = await running.bot.log.search("when does the freeze start", here, k=2)
    assert question.content == "the deploy freeze starts on friday at noon"
    link = f"https://discord.com/channels/{GUILD_ID}/{CHANNEL_ID}/{asked['id']}"
    assert question.link == link
    assert reply.content == "Noted." and reply.link == link  # a reply leads to its question


async def test_mentions_in_one_channel_share_one_conversation_history(running: Running) -> None:
    running.ollama.reply("Noted: the VPN is vpn-2.")
    await running.discord.send_message(f"{mention(BOT.id)} the VPN is vpn-2", mentions=[BOT])
    await running.discord.wait_for_posts(1)
    running.ollama.reply("vpn-2.")
    await running.discord.send_message(f"{mention(BOT.id)} which VPN again?", mentions=[BOT])
    await running.discord.wait_for_posts(2)
    history = [m["content"] for m in running.chat_turns()[-1]["messages"][1:-1]]
    assert history == ["the VPN is vpn-2", "Noted: the VPN is vpn-2."]


async def test_a_mention_of_the_bots_role_counts_as_a_mention(running: Running) -> None:
    running.ollama.reply("Here.")
    await running.discord.send_message(
        f"<@&{BOT_ROLE_ID}> are you there?", mention_roles=[BOT_ROLE_ID]
    )
    [reply] = await running.discord.wait_for_posts(1)
    assert reply.content == "Here."
    assert running.chat_turns()[-1]["messages"][-1]["content"].endswith("are you there?")


async def test_channel_chatter_without_a_mention_is_ignored(running: Running) -> None:
    running.ollama.reply("Answered.")
    await running.discord.send_message("lunch anyone?")
    await running.discord.send_message(f"{mention(BOT.id)} hello", mentions=[BOT])
    [reply] = await running.discord.wait_for_posts(1)
    assert reply.content == "Answered."
    assert len(running.chat_turns()) == 1


async def test_a_thread_the_bot_is_part_of_continues_without_a_mention(
    running: Running,
) -> None:
    fake = running.discord
    running.ollama.reply("Deploys are on Tuesdays.")
    await fake.send_message("pizza or sushi?", channel_id=OTHER_THREAD_ID)
    await fake.send_message("and when do we deploy?", channel_id=JOINED_THREAD_ID)
    [reply] = await fake.wait_for_posts(1)
    assert reply.channel_id == JOINED_THREAD_ID
    assert reply.content == "Deploys are on Tuesdays."
    assert "message_reference" not in reply.body  # posted in the thread
    assert len(running.chat_turns()) == 1  # the other thread's chatter was not answered

    running.ollama.reply("Sushi.")
    await fake.send_message(
        f"{mention(BOT.id)} pizza or sushi?", channel_id=OTHER_THREAD_ID, mentions=[BOT]
    )
    await fake.wait_for_posts(2)
    await running.bot.dispatcher.wait_idle()
    running.ollama.reply("Mochi.")
    await fake.send_message("and for dessert?", channel_id=OTHER_THREAD_ID)
    await fake.wait_for_posts(3)
    assert [(p.channel_id, p.content) for p in fake.posted[1:]] == [
        (OTHER_THREAD_ID, "Sushi."),
        (OTHER_THREAD_ID, "Mochi."),  # it answered there, so it is part of that thread now
    ]


async def test_a_long_reply_is_split_at_2000_characters(running: Running) -> None:
    paragraph = "The runbook says: " + "check the dashboards, then the logs. " * 40
    running.ollama.reply("\n\n".join([paragraph.strip()] * 4))
    await running.discord.send_message(f"{mention(BOT.id)} the runbook?", mentions=[BOT])
    await running.discord.wait_until(lambda: len(running.discord.posted) >= 3)
    await running.bot.dispatcher.wait_idle()
    parts = running.discord.posted
    assert all(len(p.content) <= 2000 for p in parts)
    assert "message_reference" in parts[0].body
    assert all("message_reference" not in p.body for p in parts[1:])
    assert "".join(p.content for p in parts).count("check the dashboards") == 160


async def test_everyone_in_a_model_reply_goes_out_with_mentions_disabled(
    running: Running,
) -> None:
    shout = f"@everyone @here the deploy is done, <@&{BOT_ROLE_ID}> and {mention(MALLORY.id)}!"
    running.ollama.reply(shout)
    await running.discord.send_message(f"{mention(BOT.id)} status?", mentions=[BOT])
    [reply] = await running.discord.wait_for_posts(1)
    assert reply.content == shout
    assert reply.body["allowed_mentions"] == {"parse": [], "replied_user": True}


async def test_a_refused_post_is_one_readable_log_line_and_the_bot_carries_on(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    running.discord.refuse_posts(CHANNEL_ID)
    running.ollama.reply("You will never see this.")
    await running.discord.send_message(f"{mention(BOT.id)} hello", mentions=[BOT])
    channel_posts = f"/channels/{CHANNEL_ID}/messages"
    await running.discord.wait_until(lambda: running.discord.requests_to("POST", channel_posts))
    await running.bot.dispatcher.wait_idle()
    assert len(running.discord.requests_to("POST", channel_posts)) == 1  # and no apology

    running.ollama.reply("Hello in private.")
    await running.discord.send_message("hello?", dm=True)
    [reply] = await running.discord.wait_for_posts(1)
    assert reply.content == "Hello in private."
    [error] = [r for r in caplog.records if r.name == "adapters.discord.adapter"]
    assert error.levelno == logging.ERROR and error.exc_info is None
    assert error.getMessage() == (
        "Discord refused to post (HTTP 403, code 50013): lorebot lacks a permission in "
        f"channel {CHANNEL_ID}: give it Send Messages (Send Messages in Threads for a thread), "
        "Add Reactions and Read Message History there"
    )


# --- duplicates -------------------------------------------------------------------------


async def test_the_same_message_create_twice_gives_one_reply(running: Running) -> None:
    running.ollama.reply("Once.")
    running.ollama.reply("Next.")
    asked = await running.discord.send_message(f"{mention(BOT.id)} hi", mentions=[BOT])
    await running.discord.dispatch("MESSAGE_CREATE", asked)
    following = await running.discord.send_message(f"{mention(BOT.id)} next", mentions=[BOT])
    await running.discord.wait_for_posts(2)
    await running.bot.dispatcher.wait_idle()
    posted = running.discord.posted
    assert [p.content for p in posted] == ["Once.", "Next."]
    assert [p.body["message_reference"]["message_id"] for p in posted] == [
        int(asked["id"]),
        int(following["id"]),
    ]


async def test_a_replay_after_a_resume_gives_no_second_reply(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.discord.adapter")
    running.ollama.reply("First answer.")
    running.ollama.reply("Second answer.")
    asked = await running.discord.send_message(f"{mention(BOT.id)} one", mentions=[BOT])
    await running.discord.wait_for_posts(1)

    await running.discord.reconnect()
    await running.discord.wait_until(lambda: running.discord.resumes)
    await running.discord.dispatch("MESSAGE_CREATE", asked)  # Discord replays after RESUMED
    await running.discord.send_message(f"{mention(BOT.id)} two", mentions=[BOT])
    await running.discord.wait_for_posts(2)
    await running.bot.dispatcher.wait_idle()

    assert [p.content for p in running.discord.posted] == ["First answer.", "Second answer."]
    assert len(running.discord.identifies) == 1  # resumed, not a new session
    assert running.adapter.connected
    logged = [r.message for r in caplog.records]
    assert any("lost the Discord gateway connection" in m for m in logged)
    assert any("resumed the Discord gateway session" in m for m in logged)


# --- approvals ----------------------------------------------------------------------------


async def _dm_card(running: Running) -> Posted:
    running.ollama.reply(json.dumps({"topic": "staging-db", "summary": "staging is pg-2"}))
    await running.discord.send_message(
        "remember that the staging DB is pg-stage-2.internal", dm=True
    )
    card = (await running.discord.wait_for_posts(1))[0]
    await running.discord.wait_until(lambda: len(card.reactions) == 2)
    return card


async def test_a_dm_remember_posts_a_card_and_the_requesters_reaction_saves_it(
    running: Running,
) -> None:
    card = await _dm_card(running)
    assert card.channel_id == ALICE.dm_channel_id
    assert "message_reference" not in card.body
    assert card.content.startswith("📝 Save this note?") and "(private)" in card.content
    assert card.reactions == [APPROVE, REJECT]
    assert await running.bot.notes.fetch(ALICE_SCOPE, "staging-db") is None

    await running.discord.react(card.id, APPROVE, user=ALICE)
    await running.discord.wait_until(lambda: card.edits)
    note = await running.bot.notes.fetch(ALICE_SCOPE, "staging-db")
    assert note is not None and note.body == "the staging DB is pg-stage-2.internal"
    assert card.current.startswith("✅ Saved `staging-db`")
    [edit] = running.discord.requests_to("PATCH")
    assert edit.path == f"/channels/{ALICE.dm_channel_id}/messages/{card.id}"
    proposal = await running.bot.proposals.fetch_by_card(
        "discord", str(ALICE.dm_channel_id), str(card.id)
    )
    assert proposal is not None and proposal.decided_by == str(ALICE_SCOPE)


async def test_another_users_reaction_changes_nothing(running: Running) -> None:
    card = await _dm_card(running)
    await running.discord.react(card.id, APPROVE, user=MALLORY)
    await running.discord.react(card.id, REJECT, user=ALICE)  # handled after Mallory's
    await running.discord.wait_until(lambda: card.edits)
    await running.bot.dispatcher.wait_idle()
    assert len(card.edits) == 1 and card.current.startswith("❌ Discarded")
    assert await running.bot.notes.list_notes() == []


async def test_a_card_in_a_guild_channel_is_decided_by_raw_reaction_events(
    running: Running,
) -> None:
    running.ollama.reply(json.dumps({"topic": "deploy-day", "summary": "deploys on tuesday"}))
    asked = await running.discord.send_message(
        f"{mention(BOT.id)} remember that deploys happen on tuesdays", mentions=[BOT]
    )
    card = (await running.discord.wait_for_posts(1))[0]
    assert card.body["message_reference"]["message_id"] == int(asked["id"])
    await running.discord.wait_until(lambda: len(card.reactions) == 2)

    await running.discord.react(card.id, APPROVE, user=ALICE)
    await running.discord.wait_until(lambda: card.edits)
    channel = Scope.parse(f"channel:discord/{CHANNEL_ID}")
    note = await running.bot.notes.fetch(channel, "deploy-day")
    assert note is not None and card.current.startswith("✅ Saved")
    proposal = await running.bot.proposals.fetch_by_card("discord", str(CHANNEL_ID), str(card.id))
    assert proposal is not None and proposal.conversation["team_id"] == str(GUILD_ID)


async def test_the_bots_own_messages_and_reactions_never_become_events(
    fake_discord: FakeDiscord,
) -> None:
    events: list[Event] = []

    async def collect(event: Event) -> None:
        events.append(event)

    adapter = adapter_for(fake_discord)
    await adapter.start(collect)
    try:
        dm = ConversationRef("discord", str(ALICE.dm_channel_id), is_dm=True)
        card = await adapter.send(dm, "📝 Save this note?")
        await adapter.add_reaction(card, APPROVE)  # Discord echoes both back to the bot
        await fake_discord.react(int(card.message_id), APPROVE, user=ALICE)
        await fake_discord.wait_until(lambda: events)
        assert events == [
            ReactionEvent(
                dm,
                UserRef("discord", str(ALICE.id), ""),  # a DM reaction carries no name
                APPROVE,
                card.message_id,
                f"{card.message_id}:{ALICE.id}:{APPROVE}",
            )
        ]
    finally:
        await adapter.close()


# --- the daemon ---------------------------------------------------------------------------


def _daemon_env(
    tmp_path: Path, fake: FakeDiscord, ollama: FakeOllama, token: str
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOREBOT_")}
    env.update(
        LOREBOT_DATABASE__PATH=str(tmp_path / "daemon.db"),
        LOREBOT_OLLAMA__HOST=ollama.url,
        LOREBOT_DISCORD__TOKEN=token,
        LOREBOT_DISCORD__API_BASE_URL=fake.api_base_url,
        LOREBOT_DISCORD__GATEWAY_URL=fake.gateway_url,
    )
    return env


class Daemon:
    """`python -m bot.cli.main run` as a child process, its stderr collected line by line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    async def wait_until(self, check: Callable[[], object], within: float = 20.0) -> None:
        """Poll `check` until it is truthy; fail at once if the daemon exits first."""
        async with asyncio.timeout(within):
            while not check():
                if self.process.returncode is not None:
                    raise AssertionError(f"the daemon exited early:\n{self.stderr}")
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.05):
                        await asyncio.shield(self._reader)

    async def wait(self, within: float = 20.0) -> int:
        async with asyncio.timeout(within):
            code = await self.process.wait()
            await self._reader
        return code

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self._reader


async def start_daemon(env: dict[str, str], cwd: Path) -> Daemon:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "run",
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    return Daemon(process)


async def test_the_daemon_answers_a_mention_and_stops_cleanly_on_sigterm(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama
) -> None:
    daemon = await start_daemon(_daemon_env(tmp_path, fake_discord, fake_ollama, TOKEN), tmp_path)
    try:
        await daemon.wait_until(lambda: fake_discord.identifies)
        fake_ollama.reply("Hello from the daemon.")
        asked = await fake_discord.send_message(f"{mention(BOT.id)} hello", mentions=[BOT])
        [reply] = await fake_discord.wait_for_posts(1, within=20.0)
        assert reply.content == "Hello from the daemon."
        assert reply.body["message_reference"]["message_id"] == int(asked["id"])

        daemon.process.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0, daemon.stderr
    finally:
        await daemon.kill()
    assert not fake_discord.connected
    assert TOKEN not in daemon.stderr


async def test_the_daemon_with_a_bad_token_exits_with_one_line(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama
) -> None:
    env = _daemon_env(tmp_path, fake_discord, fake_ollama, "wrong-token")
    daemon = await start_daemon(env, tmp_path)
    try:
        code = await daemon.wait()
    finally:
        await daemon.kill()
    assert code == 1
    assert daemon.lines[-1] == f"lorebot: {BAD_TOKEN}"
    assert "Traceback" not in daemon.stderr and "wrong-token" not in daemon.stderr


async def _ignore(event: object) -> None:
    raise AssertionError(f"no event expected, got {event!r}")
