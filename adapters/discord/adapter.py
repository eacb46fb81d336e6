"""The Discord adapter: discord.py's gateway and REST client behind the adapter contract.

Guild messages that mention the bot, DMs, and messages in threads the bot is part of become
`Message` events; `/lorebot` commands `SlashCommand` events (`adapters.discord.commands`),
clicks on cards' buttons `ButtonClick` events (`adapters.discord.buttons`); reactions arrive
as raw gateway events, so a card posted before a restart still works. Replies in guild
channels are Discord replies to the message that asked, and grow by edits while the model
writes them (`adapters.discord.stream`). Gateway objects become events in
`adapters.discord.events`; failures are worded in `adapters.discord.errors`.

Where discord.py connects is a process-wide setting (`discord.http.Route.BASE` and
`discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`); `start()` sets both from this adapter's
configuration, so one process talks to one Discord.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final

import aiohttp
import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.base import (
    Button,
    ButtonClick,
    ConversationRef,
    Event,
    EventSink,
    Memberships,
    NotTaken,
    PostedMessage,
    ReplyStream,
    SlashCommand,
    Status,
    UserRef,
)
from adapters.discord.buttons import CardButton, card_view
from adapters.discord.commands import UNKNOWN_CHANNEL as UNKNOWN_CHANNEL
from adapters.discord.commands import command_tree, sync_commands
from adapters.discord.errors import BAD_TOKEN as BAD_TOKEN
from adapters.discord.errors import ENABLE_INTENT, describe, rest, start_error
from adapters.discord.errors import MISSING_INTENT as MISSING_INTENT
from adapters.discord.errors import DiscordRequestError as DiscordRequestError
from adapters.discord.errors import DiscordStartError as DiscordStartError
from adapters.discord.events import PLATFORM, message_event, reaction_event
from adapters.discord.members import memberships
from adapters.discord.stream import STREAM_INTERVAL_S, DiscordReplyStream
from adapters.discord.text import MAX_MESSAGE_CHARS, clip
from adapters.discord.typing_indicator import typing_in

_log = logging.getLogger(__name__)

DEFAULT_API_BASE_URL: Final = "https://discord.com/api/v10"
DISCORD_GATEWAY: Final = DiscordWebSocket.DEFAULT_GATEWAY

# What the bot reads: servers and their channels, messages and reactions in guilds and DMs,
# and (privileged) the text of messages that do not mention it, for threads it is part of.
INTENTS: Final = discord.Intents(
    guilds=True,
    guild_messages=True,
    dm_messages=True,
    message_content=True,
    guild_reactions=True,
    dm_reactions=True,
)

# Model output can never ping @everyone, @here, roles or users it merely names; a reply
# notifies only the person who asked.
ALLOWED_MENTIONS: Final = discord.AllowedMentions(
    everyone=False, users=False, roles=False, replied_user=True
)

REPLIES_REMEMBERED: Final = 1000
CLOSE_GRACE_S: Final = 1.0


class DiscordAdapter:
    """A Discord bot user: events in through the gateway, replies out through REST."""

    platform = PLATFORM
    max_message_chars = MAX_MESSAGE_CHARS
    shows_buttons = True
    stream_interval_s = STREAM_INTERVAL_S

    def __init__(
        self,
        token: str,
        api_base_url: str = DEFAULT_API_BASE_URL,
        gateway_url: str | None = None,
        *,
        ready_timeout: float = 60.0,
        guild_ready_timeout: float = 2.0,
        command_guild_id: int | None = None,
    ) -> None:
        self._token = token
        self.api_base_url = api_base_url.rstrip("/")
        self.gateway_url = gateway_url
        self.ready_timeout = ready_timeout
        self.guild_ready_timeout = guild_ready_timeout
        self.command_guild_id = command_guild_id
        self._client: _GatewayClient | None = None
        self._runner: asyncio.Task[None] | None = None
        self._sync: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._sink: EventSink | None = None
        self._closing = False
        self._online = False
        self._threads: set[int] = set()  # threads the bot posted in since it started
        self._replied: dict[str, None] = {}  # questions answered with a reply, oldest first

    @property
    def connected(self) -> bool:
        """Whether the gateway session is up (False while discord.py reconnects)."""
        return self._online and self._client is not None

    def __repr__(self) -> str:  # never show the token
        return f"DiscordAdapter(api_base_url={self.api_base_url!r})"

    # --- lifecycle ------------------------------------------------------------------

    async def start(self, sink: EventSink) -> None:
        """Log in, connect the gateway and return once Discord says the bot is ready.

        Raises `DiscordStartError` with one line naming the problem when the token is
        rejected, the Message Content intent is not enabled, or Discord cannot be reached.
        """
        if self._client is not None:
            raise RuntimeError("the Discord adapter is already started")
        self._sink = sink
        Route.BASE = self.api_base_url
        DiscordWebSocket.DEFAULT_GATEWAY = (
            yarl.URL(self.gateway_url) if self.gateway_url else DISCORD_GATEWAY
        )
        # lorebot never joins voice, so discord.py's "PyNaCl/davey is not installed" is noise.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        client = _GatewayClient(
            self,
            intents=INTENTS,
            allowed_mentions=ALLOWED_MENTIONS,
            guild_ready_timeout=self.guild_ready_timeout,
        )
        tree = command_tree(client, self)
        client.add_dynamic_items(CardButton)  # cards posted before a restart too
        self._client = client
        self._closing = False
        try:
            await self._login(client)
            self._ready = asyncio.get_running_loop().create_future()
            self._runner = asyncio.create_task(client.connect(reconnect=True), name="discord")
            self._runner.add_done_callback(self._gateway_stopped)
            async with asyncio.timeout(self.ready_timeout):
                await self._ready
        except TimeoutError:
            await self.close()
            raise DiscordStartError(
                f"Discord's gateway at {self._gateway()} did not get ready within "
                f"{self.ready_timeout:g} s"
            ) from None
        except BaseException:
            await self.close()
            raise
        user = client.user
        _log.info(
            "connected to Discord as %s (id %s) in %d servers",
            user,
            user.id if user else "?",
            len(client.guilds),
        )
        self._sync = asyncio.create_task(
            sync_commands(tree, self.command_guild_id), name="discord-commands"
        )

    async def _login(self, client: discord.Client) -> None:
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            raise DiscordStartError(BAD_TOKEN) from None
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            raise DiscordStartError(
                f"could not log in to Discord at {self.api_base_url}: {describe(exc)}"
            ) from None
        flags = client.application_flags
        if not (flags.gateway_message_content or flags.gateway_message_content_limited):
            _log.warning(
                "the Message Content intent looks disabled for this application, so Discord "
                "will refuse the connection: %s",
                ENABLE_INTENT,
            )

    def _gateway_stopped(self, task: asyncio.Task[None]) -> None:
        """The gateway loop ended: before ready it fails `start`; afterwards it is logged."""
        exc = None if task.cancelled() else task.exception()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(start_error(exc, self._gateway()))
        elif exc is not None and not self._closing:
            error = start_error(exc, self._gateway())
            _log.error("the Discord gateway stopped and will not reconnect: %s", error)

    def _gateway(self) -> str:
        return self.gateway_url or str(DISCORD_GATEWAY)

    async def close(self) -> None:
        """Disconnect from Discord; safe to call twice, and after a failed start."""
        client, self._client = self._client, None
        if client is None:
            return
        self._closing = True
        self._online = False
        sync, self._sync = self._sync, None
        if sync is not None:
            sync.cancel()
            await asyncio.wait({sync})
        await client.close()
        runner, self._runner = self._runner, None
        if runner is not None and not runner.done():
            # A connected gateway loop ends once its socket is closed; one that never got
            # ready is only waiting to retry, so there is nothing to wait for.
            await asyncio.wait({runner}, timeout=CLOSE_GRACE_S if self._was_ready() else 0)
            runner.cancel()
            await asyncio.wait({runner})
        if self._was_ready():  # which also retrieves a failed start's exception
            _log.info("disconnected from Discord")
        self._ready = None

    # --- gateway events (called by _GatewayClient; they only convert and hand over) --

    def _on_ready(self) -> None:
        self._online = True
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
        else:
            _log.info("Discord gateway session re-established")

    def _was_ready(self) -> bool:
        ready = self._ready
        return (
            ready is not None and ready.done() and not ready.cancelled() and not ready.exception()
        )

    def _on_disconnect(self) -> None:
        self._online = False
        if self._was_ready() and not self._closing:
            _log.warning("lost the Discord gateway connection; discord.py is reconnecting")

    def _on_resumed(self) -> None:
        self._online = True
        _log.info("resumed the Discord gateway session")

    async def _on_message(self, message: discord.Message) -> None:
        bot = self._client.user if self._client else None
        if bot is None or self._sink is None:
            return
        event = message_event(message, bot, self._threads)
        if event is not None:
            await self._give(event)

    async def _on_raw_reaction(self, payload: discord.RawReactionActionEvent) -> None:
        client = self._client
        if client is None or client.user is None or self._sink is None:
            return
        event = reaction_event(payload, client.user, client.get_user)
        if event is not None:
            await self._give(event)

    async def deliver(self, event: SlashCommand | ButtonClick) -> bool:
        """Hand an acknowledged `/lorebot` command or click to the core; False when it did
        not take it (lorebot is stopping)."""
        return await self._give(event)

    async def _give(self, event: Event) -> bool:
        """Hand `event` to the core; Discord never sends an event again, so one the core
        did not take (lorebot is stopping) is dropped."""
        if self._sink is None:
            return False
        try:
            await self._sink(event)
        except NotTaken as exc:
            _log.info("dropped a Discord event: %s", exc)
            return False
        return True

    # --- answering ------------------------------------------------------------------

    def _running(self) -> discord.Client:
        if self._client is None:
            raise RuntimeError("the Discord adapter is not started")
        return self._client

    async def send(
        self, conversation: ConversationRef, text: str, buttons: Sequence[Button] = ()
    ) -> PostedMessage:
        """Post `text` as one message, clipped to 2,000 characters (the core splits long
        replies before), with `buttons` under it. In a guild channel the bot's first message
        for a question is a Discord reply to it."""
        client = self._running()
        channel_id = int(conversation.channel_id)
        guild_id = int(conversation.team_id) if conversation.team_id else None
        channel = client.get_partial_messageable(channel_id, guild_id=guild_id)
        content = clip(text, self.max_message_chars)
        reply_to = conversation.reply_to
        if isinstance(client.get_channel(channel_id), discord.Thread):
            self._threads.add(channel_id)  # posting there makes the bot part of the thread
        if reply_to is None or reply_to in self._replied:
            sent = await rest("post", channel_id, channel.send(content, view=card_view(buttons)))
        else:
            reference = discord.MessageReference(
                message_id=int(reply_to),
                channel_id=channel_id,
                guild_id=guild_id,
                fail_if_not_exists=False,
            )
            call = channel.send(content, reference=reference, view=card_view(buttons))
            sent = await rest("post", channel_id, call)
            self._remember_reply(reply_to)
        return PostedMessage(conversation, str(sent.id))

    send_card = send  # a card is a message with buttons (`ShowsButtons`)

    def stream_reply(self, conversation: ConversationRef, recipient: UserRef) -> ReplyStream:
        """A reply posted by its first `show` (as `send` posts it) and edited after; Discord
        shows every edit to everyone in the channel, so `recipient` changes nothing."""
        return DiscordReplyStream(self, conversation)

    def working(self, conversation: ConversationRef) -> AbstractAsyncContextManager[Status]:
        """Discord's "lorebot is typing…" in the channel while the block runs."""
        return typing_in(self._client, conversation)

    async def direct_conversation(self, user_id: str) -> ConversationRef:
        """The bot's DM with `user_id` (POST /users/@me/channels), for reminders."""
        call = self._running().create_dm(discord.Object(int(user_id)))
        dm = await rest("open a direct message", 0, call)
        return ConversationRef(self.platform, str(dm.id), is_dm=True)

    async def memberships(self, user_id: str) -> Memberships | None:
        """The guilds `user_id` shares with the bot and the channels they may view there,
        for the web console; None while this replica does not hold the gateway."""
        if self._client is None or not self._client.is_ready():
            return None
        return await memberships(self._client, user_id)

    def _remember_reply(self, message_id: str) -> None:
        """Note that the bot replied to `message_id` (recent ones), so later messages for the
        same question follow plainly."""
        self._replied[message_id] = None
        while len(self._replied) > REPLIES_REMEMBERED:
            del self._replied[next(iter(self._replied))]

    def _partial(self, posted: PostedMessage) -> discord.PartialMessage:
        channel = self._running().get_partial_messageable(int(posted.conversation.channel_id))
        return channel.get_partial_message(int(posted.message_id))

    async def edit(self, posted: PostedMessage, text: str) -> None:
        """Replace the text of a message the bot posted (clipped to 2,000 characters), and
        take its buttons away."""
        call = self._partial(posted).edit(content=clip(text, self.max_message_chars), view=None)
        await rest("edit a message", int(posted.conversation.channel_id), call)

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        """React to a message the bot posted with a unicode emoji."""
        call = self._partial(posted).add_reaction(emoji)
        await rest("add a reaction", int(posted.conversation.channel_id), call)


class _GatewayClient(discord.Client):
    """discord.py's client, with its events forwarded to the adapter."""

    def __init__(self, adapter: DiscordAdapter, **options: Any) -> None:
        super().__init__(**options)
        self._adapter = adapter
        self.click_host = adapter  # where a card's button hands its clicks

    async def on_ready(self) -> None:
        self._adapter._on_ready()

    async def on_disconnect(self) -> None:
        self._adapter._on_disconnect()

    async def on_resumed(self) -> None:
        self._adapter._on_resumed()

    async def on_message(self, message: discord.Message) -> None:
        await self._adapter._on_message(message)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self._adapter._on_raw_reaction(payload)

    async def on_raw_reaction_remove(self, payload: discord.RawReactionActionEvent) -> None:
        await self._adapter._on_raw_reaction(payload)
