"""A fake Discord REST API and gateway on 127.0.0.1 that discord.py's real client talks to.

Point the client at it with ``api_base_url`` (``http://127.0.0.1:PORT/api/v10``) and
``gateway_url`` (``ws://127.0.0.1:PORT/gateway``). It plays one guild with a text channel,
a thread the bot has joined and one it has not, and DMs; it records every request::

    fake = FakeDiscord()                      # or the ``fake_discord`` fixture
    await fake.start()
    sent = await fake.send_message(f"<@{BOT.id}> hi", mentions=[BOT])   # MESSAGE_CREATE
    [reply] = await fake.wait_for_posts(1)     # what the bot POSTed
    await fake.react(reply.id, "✅", user=ALICE)                         # MESSAGE_REACTION_ADD
    await fake.reconnect()                     # op 7: the client reconnects and RESUMEs
    await fake.slash_command("recall", about="deploys")                  # INTERACTION_CREATE
    [ack] = await fake.wait_until(lambda: fake.callbacks)   # the interaction's callback
    [answer] = await fake.wait_until(lambda: fake.followups)

Application commands are synced with ``PUT /applications/{id}/commands`` (or
``/guilds/{id}/commands``), recorded in ``command_syncs`` and kept in ``registered``, where
``GET`` and ``DELETE`` of global commands find them; ``refuse_command_sync()`` answers
403 Missing Access as Discord does when the bot was invited without the
``applications.commands`` scope. Interaction callbacks and follow-ups are webhook calls that
carry the interaction's token in the path and no Authorization header.

Like Discord it echoes the bot's own messages and reactions back through the gateway, so
the client must ignore them. Behaviour that discord.py 2.7 needs (checked here): JSON with a
Content-Type of exactly ``application/json``; ``/users/@me`` and ``/oauth2/applications/@me``
at login; HELLO, heartbeat ACKs, READY with ``resume_gateway_url`` and ``session_id``, then
GUILD_CREATE; reactions with ``type`` and ``burst``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import unquote

import pytest_asyncio
from aiohttp import WSMsgType, web

from tests.fakes.discord_oauth import DiscordOAuth
from tests.support.polling import HANG_GUARD_S

__all__ = [
    "ADMIN",
    "ALICE",
    "APPLICATION_ID",
    "BOT",
    "BOT_ROLE_ID",
    "CHANNEL_ID",
    "GUILD_ID",
    "INTENT",
    "JOINED_THREAD_ID",
    "MALLORY",
    "OTHER_THREAD_ID",
    "TOKEN",
    "Callback",
    "CommandSync",
    "FakeDiscord",
    "FakeUser",
    "Posted",
    "FollowUp",
    "Recorded",
    "fake_discord_fixture",
]

Body = dict[str, Any]
T = TypeVar("T")

JSON_TYPE = "application/json"
TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAx.fake.bot-token-for-tests"

# Gateway intent bits (https://discord.com/developers/docs/events/gateway#gateway-intents).
INTENT = {
    "guilds": 1 << 0,
    "guild_members": 1 << 1,
    "guild_presences": 1 << 8,
    "guild_messages": 1 << 9,
    "guild_message_reactions": 1 << 10,
    "direct_messages": 1 << 12,
    "direct_message_reactions": 1 << 13,
    "message_content": 1 << 15,
}
PRIVILEGED = INTENT["guild_members"] | INTENT["guild_presences"] | INTENT["message_content"]
FLAG_MESSAGE_CONTENT_LIMITED = 1 << 19  # the portal's Message Content toggle, under 100 servers

APPLICATION_ID = 1000000000000000001
GUILD_ID = 1100000000000000001
CHANNEL_ID = 1100000000000000002
JOINED_THREAD_ID = 1100000000000000003
OTHER_THREAD_ID = 1100000000000000004
BOT_ROLE_ID = 1100000000000000005
OWNER_ID = 1200000000000000009


@dataclass(frozen=True)
class FakeUser:
    id: int
    username: str
    display_name: str
    bot: bool = False

    def payload(self) -> Body:
        return {
            "id": str(self.id),
            "username": self.username,
            "global_name": self.display_name,
            "discriminator": "0",
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
        }

    @property
    def dm_channel_id(self) -> int:
        return self.id + 7


BOT = FakeUser(1000000000000000001, "lorebot", "lorebot", bot=True)
ALICE = FakeUser(1200000000000000001, "alice", "Alice")
MALLORY = FakeUser(1200000000000000002, "mallory", "Mallory")
ADMIN = FakeUser(1200000000000000003, "admin", "Admin")


@dataclass(frozen=True)
class Recorded:
    """One REST request: method, path below ``/api/v10``, JSON body and Authorization."""

    method: str
    path: str
    body: Any
    authorization: str | None


@dataclass
class Posted:
    """A message the bot created through ``POST /channels/{id}/messages``."""

    id: int
    channel_id: int
    body: Body
    edits: list[Body] = field(default_factory=list)
    reactions: list[str] = field(default_factory=list)

    @property
    def content(self) -> str:
        return str(self.body.get("content", ""))

    @property
    def current(self) -> str:
        """The text after the last edit."""
        return str(self.edits[-1]["content"]) if self.edits else self.content

    @property
    def components(self) -> list[Body]:
        """The action rows it shows now: an edit that sends ``components`` replaces them."""
        for edit in reversed(self.edits):
            if "components" in edit:
                return list(edit["components"])
        return list(self.body.get("components") or [])

    @property
    def buttons(self) -> list[Body]:
        return [c for row in self.components for c in row["components"]]

    def button(self, label: str) -> Body:
        return next(b for b in self.buttons if b.get("label") == label)


@dataclass(frozen=True)
class CommandSync:
    """One bulk overwrite of the application's commands: in a guild, or global (None)."""

    guild_id: int | None
    commands: list[Body]


@dataclass(frozen=True)
class Callback:
    """The response to one interaction (``type`` 5 is a deferred reply; ``flags`` 64 means
    only the person who invoked it sees it)."""

    interaction_id: int
    type: int
    flags: int


@dataclass(frozen=True)
class FollowUp:
    """A message sent with an interaction's token after its callback."""

    interaction_id: int
    content: str
    flags: int


# Every permission an admin has, as Discord sends it in an interaction.
ALL_PERMISSIONS = str((1 << 51) - 1)


def _json(data: Any, status: int = 200) -> web.Response:
    """A JSON response whose Content-Type is exactly ``application/json``."""
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": JSON_TYPE}
    )


def _error(status: int, message: str, code: int = 0) -> web.Response:
    return _json({"message": message, "code": code}, status=status)


def _valid_components(body: Body) -> bool:
    """Whether Discord takes a message's ``components``: action rows (type 1) of at most
    five buttons (type 2), each with a style of 1-4, a label of at most 80 characters and a
    custom_id of at most 100, unique in the message."""
    rows = body.get("components") or []
    ids = []
    for row in rows:
        buttons = row.get("components") or []
        if row.get("type") != 1 or not 0 < len(buttons) <= 5:
            return False
        for button in buttons:
            custom_id = str(button.get("custom_id") or "")
            if (
                button.get("type") != 2
                or button.get("style") not in (1, 2, 3, 4)
                or len(str(button.get("label") or "")) > 80
                or not 0 < len(custom_id) <= 100
            ):
                return False
            ids.append(custom_id)
    return len(rows) <= 5 and len(set(ids)) == len(ids)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class FakeDiscord:
    """Discord's REST API and gateway for one bot, on 127.0.0.1."""

    def __init__(
        self,
        token: str = TOKEN,
        *,
        privileged_allowed: int = INTENT["message_content"],
        application_flags: int = FLAG_MESSAGE_CONTENT_LIMITED,
        echo: bool = True,
    ) -> None:
        self.token = token
        self.privileged_allowed = privileged_allowed
        self.application_flags = application_flags
        self.echo = echo
        self.requests: list[Recorded] = []
        self.identifies: list[Body] = []
        self.resumes: list[Body] = []
        self.heartbeats = 0
        self.posted: list[Posted] = []
        self.refusals: list[int] = []  # close codes the fake ended a gateway session with
        self.refused_posts: dict[int, tuple[int, int, str]] = {}
        self.refused_typing: set[int] = set()  # channels where typing gets 403 Missing Permissions
        self.refused_edits: list[tuple[int, int, str]] = []  # answers for the next edits
        self.command_syncs: list[CommandSync] = []
        # The commands Discord holds now, globally (None) or per guild, as it saved them.
        self.registered: dict[int | None, list[Body]] = {}
        self.refused_sync: tuple[int, int, str] | None = None
        self.callbacks: list[Callback] = []
        self.followups: list[FollowUp] = []
        self._interactions: dict[str, Body] = {}  # token → INTERACTION_CREATE payload
        self._ids = itertools.count(1300000000000000001)
        self._seq = 0
        self._session_id = "fake-session-1"
        self._socket: web.WebSocketResponse | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.oauth = DiscordOAuth(ALICE.payload())
        # Who is a member of the guild, as GET /guilds/{id}/members/{user} answers.
        self.guild_members = {ALICE.id, ADMIN.id}

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        api = "/api/v10"
        app.router.add_get(f"{api}/users/@me", self._me)
        app.router.add_get("/oauth2/authorize", self.oauth.authorize)
        app.router.add_post(f"{api}/oauth2/token", self.oauth.token)
        app.router.add_get(f"{api}/guilds/{{guild}}/members/{{user}}", self._guild_member)
        app.router.add_get(f"{api}/oauth2/applications/@me", self._application)
        app.router.add_get(f"{api}/channels/{{channel}}", self._channel)
        app.router.add_post(f"{api}/users/@me/channels", self._open_dm)
        app.router.add_post(f"{api}/channels/{{channel}}/messages", self._create_message)
        app.router.add_patch(f"{api}/channels/{{channel}}/messages/{{message}}", self._edit)
        app.router.add_post(f"{api}/channels/{{channel}}/typing", self._typing)
        app.router.add_put(
            f"{api}/channels/{{channel}}/messages/{{message}}/reactions/{{emoji}}/@me",
            self._add_reaction,
        )
        app.router.add_put(f"{api}/applications/{{app}}/commands", self._sync_commands)
        app.router.add_get(f"{api}/applications/{{app}}/commands", self._registered_commands)
        app.router.add_delete(
            f"{api}/applications/{{app}}/commands/{{command}}", self._delete_command
        )
        app.router.add_put(
            f"{api}/applications/{{app}}/guilds/{{guild}}/commands", self._sync_commands
        )
        app.router.add_post(f"{api}/interactions/{{id}}/{{token}}/callback", self._callback)
        app.router.add_post(f"{api}/webhooks/{{app}}/{{token}}", self._followup)
        app.router.add_route("*", f"{api}/{{tail:.*}}", self._unknown)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def connected(self) -> bool:
        """Whether a client holds a gateway connection."""
        return bool(self._sockets)

    @property
    def api_base_url(self) -> str:
        return f"{self.url}/api/v10"

    @property
    def gateway_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/gateway"

    # -- what the test does ------------------------------------------------------------

    def message_payload(
        self,
        content: str,
        *,
        author: FakeUser = ALICE,
        channel_id: int = CHANNEL_ID,
        dm: bool = False,
        mentions: Sequence[FakeUser] = (),
        mention_roles: Sequence[int] = (),
        message_id: int | None = None,
    ) -> Body:
        """A MESSAGE_CREATE payload as Discord builds it; ``mentions`` fills the array that
        discord.py reads ``message.mentions`` from."""
        data: Body = {
            "id": str(message_id or next(self._ids)),
            "channel_id": str(author.dm_channel_id if dm else channel_id),
            "author": author.payload(),
            "content": content,
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [
                {**user.payload(), **({} if dm else {"member": self._member(user, False)})}
                for user in mentions
            ],
            "mention_roles": [str(role) for role in mention_roles],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
        }
        if not dm:
            data["guild_id"] = str(GUILD_ID)
            data["member"] = self._member(author, False)
        return data

    async def send_message(self, content: str, **kwargs: Any) -> Body:
        """Dispatch a MESSAGE_CREATE from a person (see ``message_payload``); returns it."""
        data = self.message_payload(content, **kwargs)
        await self.dispatch("MESSAGE_CREATE", data)
        return data

    async def react(
        self,
        message_id: int,
        emoji: str,
        *,
        user: FakeUser = ALICE,
        channel_id: int | None = None,
    ) -> None:
        """Dispatch a MESSAGE_REACTION_ADD; a DM or guild reaction after the message's channel."""
        posted = next((p for p in self.posted if p.id == message_id), None)
        channel = channel_id or (posted.channel_id if posted else CHANNEL_ID)
        data: Body = {
            "user_id": str(user.id),
            "channel_id": str(channel),
            "message_id": str(message_id),
            "emoji": {"id": None, "name": emoji},
            "burst": False,
            "burst_colors": [],
            "type": 0,
        }
        if posted is not None:
            data["message_author_id"] = str(BOT.id)
        if not self._is_dm(channel):
            data["guild_id"] = str(GUILD_ID)
            data["member"] = self._member(user, True)
        await self.dispatch("MESSAGE_REACTION_ADD", data)

    async def unreact(
        self, message_id: int, emoji: str, *, user: FakeUser = ALICE, channel_id: int | None = None
    ) -> None:
        """Dispatch a MESSAGE_REACTION_REMOVE (Discord sends no member and no author)."""
        posted = next((p for p in self.posted if p.id == message_id), None)
        channel = channel_id or (posted.channel_id if posted else CHANNEL_ID)
        data: Body = {
            "user_id": str(user.id),
            "channel_id": str(channel),
            "message_id": str(message_id),
            "emoji": {"id": None, "name": emoji},
            "burst": False,
            "type": 0,
        }
        if not self._is_dm(channel):
            data["guild_id"] = str(GUILD_ID)
        await self.dispatch("MESSAGE_REACTION_REMOVE", data)

    def interaction_payload(
        self,
        subcommand: str,
        *,
        user: FakeUser = ALICE,
        channel_id: int = CHANNEL_ID,
        dm: bool = False,
        channel_type: int | None = None,
        **options: str | int,
    ) -> Body:
        """An INTERACTION_CREATE payload for ``/lorebot <subcommand>`` with string
        ``options``, as Discord builds it: the group's SUB_COMMAND nested in ``data.options``,
        ``member`` in a guild and ``user`` in a DM; ``data.guild_id`` when the commands were
        last synced to the guild."""
        interaction_id = next(self._ids)
        data: Body = {
            "id": str(APPLICATION_ID + 100),
            "name": "lorebot",
            "type": 1,
            "options": [
                {
                    "name": subcommand,
                    "type": 1,
                    "options": [
                        {"name": name, "type": 4 if isinstance(value, int) else 3, "value": value}
                        for name, value in options.items()
                    ],
                }
            ],
        }
        payload: Body = {
            "id": str(interaction_id),
            "application_id": str(APPLICATION_ID),
            "type": 2,
            "data": data,
            "token": f"aW50ZXJhY3Rpb246{interaction_id}:fake-token",
            "version": 1,
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": 10485760,
        }
        if dm:
            channel: Body = {
                "id": str(user.dm_channel_id),
                "type": 1,
                "last_message_id": None,
                "flags": 0,
                "recipients": [user.payload()],
            }
            payload.update(
                user=user.payload(),
                context=1,
                authorizing_integration_owners={"0": "0"},
                app_permissions="2248473465835073",
            )
        else:
            channel = {
                "id": str(channel_id),
                "type": 11 if channel_id in (JOINED_THREAD_ID, OTHER_THREAD_ID) else 0,
                "guild_id": str(GUILD_ID),
                "name": "general",
                "permissions": ALL_PERMISSIONS,
                "flags": 0,
                "last_message_id": None,
                "nsfw": False,
                "parent_id": None,
                "position": 0,
                "rate_limit_per_user": 0,
                "topic": None,
            }
            if self.command_syncs and self.command_syncs[-1].guild_id == GUILD_ID:
                data["guild_id"] = str(GUILD_ID)
            payload.update(
                guild_id=str(GUILD_ID),
                guild={"id": str(GUILD_ID), "locale": "en-US", "features": []},
                guild_locale="en-US",
                member={**self._member(user, True), "permissions": ALL_PERMISSIONS},
                context=0,
                authorizing_integration_owners={"0": str(GUILD_ID)},
                app_permissions=ALL_PERMISSIONS,
            )
        if channel_type is not None:
            channel["type"] = channel_type
        payload.update(channel=channel, channel_id=channel["id"])
        return payload

    async def click(
        self, posted: Posted, label: str, *, user: FakeUser = ALICE, dm: bool = False
    ) -> Body:
        """Dispatch an INTERACTION_CREATE for a click by ``user`` on the button ``label`` of
        a message the bot posted (type 3, a message component); returns it."""
        button = posted.button(label)
        data = self.interaction_payload("", user=user, channel_id=posted.channel_id, dm=dm)
        data.update(
            type=3,
            data={"custom_id": button["custom_id"], "component_type": 2},
            message=self._message(posted),
        )
        self._interactions[data["token"]] = data
        await self.dispatch("INTERACTION_CREATE", data)
        return data

    async def slash_command(self, subcommand: str, **kwargs: Any) -> Body:
        """Dispatch an INTERACTION_CREATE for ``/lorebot <subcommand>`` (see
        ``interaction_payload``); returns it."""
        data = self.interaction_payload(subcommand, **kwargs)
        self._interactions[data["token"]] = data
        await self.dispatch("INTERACTION_CREATE", data)
        return data

    def refuse_next_edit(
        self, status: int = 403, code: int = 50013, message: str = "Missing Permissions"
    ) -> None:
        """Answer the next message edit with an error (default: Missing Permissions)."""
        self.refused_edits.append((status, code, message))

    def refuse_command_sync(
        self, status: int = 403, code: int = 50001, message: str = "Missing Access"
    ) -> None:
        """Answer command syncs with an error (default: the bot lacks the
        ``applications.commands`` scope)."""
        self.refused_sync = (status, code, message)

    def refuse_posts(
        self, channel_id: int, status: int = 403, code: int = 50013, message: str = ""
    ) -> None:
        """Answer posts in ``channel_id`` with an error (default: Missing Permissions)."""
        self.refused_posts[channel_id] = (status, code, message or "Missing Permissions")

    async def dispatch(self, event: str, data: Body) -> None:
        """Send one DISPATCH (op 0) with the next sequence number on the live connection."""
        self._seq += 1
        await self._send({"op": 0, "t": event, "s": self._seq, "d": data})

    async def reconnect(self) -> None:
        """Ask the client to reconnect (op 7); it comes back with a RESUME."""
        await self._send({"op": 7, "d": None, "s": None, "t": None})

    # -- what the test checks ----------------------------------------------------------

    def requests_to(self, method: str, prefix: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path.startswith(prefix)]

    async def wait_until(self, check: Callable[[], T], within: float = HANG_GUARD_S) -> T:
        """Wait up to ``within`` s for ``check()`` to be truthy; return its value. It is
        re-checked on every request and gateway message, and every 20 ms for conditions
        outside the fake."""
        async with asyncio.timeout(within):
            while not (result := check()):
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.02):
                        await self._changed.wait()
        return result

    async def wait_for_posts(self, count: int, within: float = HANG_GUARD_S) -> list[Posted]:
        """The bot's messages, once there are at least ``count``."""
        await self.wait_until(lambda: len(self.posted) >= count, within)
        return list(self.posted)

    def _touch(self) -> None:
        self._changed.set()

    # -- gateway -------------------------------------------------------------------------

    async def _send(self, payload: Body) -> None:
        if self._socket is None or self._socket.closed:
            raise RuntimeError("no client is connected to the fake gateway")
        await self._socket.send_str(json.dumps(payload))

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.add(ws)
        self._socket = ws
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        try:
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                payload = json.loads(msg.data)
                op, data = payload.get("op"), payload.get("d")
                if op == 1:
                    self.heartbeats += 1
                    await ws.send_str(json.dumps({"op": 11}))
                elif op == 2:
                    await self._identify(ws, data)
                elif op == 6:
                    await self._resume(ws, data)
                self._touch()
        finally:
            self._sockets.discard(ws)
            self._touch()
        return ws

    async def _identify(self, ws: web.WebSocketResponse, data: Body) -> None:
        self.identifies.append(data)
        if data.get("token") != self.token:
            await self._refuse(ws, 4004, "Authentication failed.")
            return
        if int(data.get("intents", 0)) & PRIVILEGED & ~self.privileged_allowed:
            await self._refuse(ws, 4014, "Disallowed intent(s).")
            return
        self._seq = 0
        self._session_id = f"fake-session-{len(self.identifies)}"
        await self.dispatch(
            "READY",
            {
                "v": 10,
                "user": {**BOT.payload(), "verified": True, "mfa_enabled": False, "flags": 0},
                "guilds": [{"id": str(GUILD_ID), "unavailable": True}],
                "session_id": self._session_id,
                "resume_gateway_url": self.gateway_url,
                "shard": [0, 1],
                "application": {"id": str(APPLICATION_ID), "flags": self.application_flags},
                "private_channels": [],
                "relationships": [],
            },
        )
        await self.dispatch("GUILD_CREATE", self._guild())

    async def _refuse(self, ws: web.WebSocketResponse, code: int, reason: str) -> None:
        self.refusals.append(code)
        await ws.close(code=code, message=reason.encode())

    async def _resume(self, ws: web.WebSocketResponse, data: Body) -> None:
        self.resumes.append(data)
        if data.get("token") != self.token or data.get("session_id") != self._session_id:
            await ws.send_str(json.dumps({"op": 9, "d": False}))
            return
        await self.dispatch("RESUMED", {})

    def _member(self, user: FakeUser, with_user: bool) -> Body:
        member: Body = {
            "roles": [str(BOT_ROLE_ID)] if user is BOT else [],
            "nick": None,
            "avatar": None,
            "joined_at": "2026-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
        }
        if with_user:
            member["user"] = user.payload()
        return member

    def _thread(self, thread_id: int, name: str, joined: bool) -> Body:
        thread: Body = {
            "id": str(thread_id),
            "guild_id": str(GUILD_ID),
            "parent_id": str(CHANNEL_ID),
            "owner_id": str(ALICE.id),
            "type": 11,
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 1,
            "member_count": 2,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": "2026-01-01T00:00:00+00:00",
                "locked": False,
            },
        }
        if joined:
            thread["member"] = {
                "id": str(thread_id),
                "user_id": str(BOT.id),
                "join_timestamp": "2026-01-01T00:00:00+00:00",
                "flags": 1,
            }
        return thread

    def _guild(self) -> Body:
        role = {
            "id": str(GUILD_ID),
            "name": "@everyone",
            "color": 0,
            "hoist": False,
            "position": 0,
            "permissions": "1071698660929",
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }
        bot_role = {
            **role,
            "id": str(BOT_ROLE_ID),
            "name": "lorebot",
            "position": 1,
            "managed": True,
            "tags": {"bot_id": str(BOT.id)},
        }
        return {
            "id": str(GUILD_ID),
            "name": "Lore Club",
            "icon": None,
            "owner_id": str(OWNER_ID),
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "system_channel_flags": 0,
            "features": [],
            "roles": [role, bot_role],
            "emojis": [],
            "stickers": [],
            "large": False,
            "unavailable": False,
            "member_count": 3,
            "joined_at": "2026-01-01T00:00:00+00:00",
            "voice_states": [],
            "presences": [],
            "members": [{**self._member(BOT, True)}],
            "channels": [
                {
                    "id": str(CHANNEL_ID),
                    "type": 0,
                    "guild_id": str(GUILD_ID),
                    "name": "general",
                    "position": 0,
                    "permission_overwrites": [],
                    "topic": None,
                    "nsfw": False,
                    "last_message_id": None,
                    "rate_limit_per_user": 0,
                    "parent_id": None,
                    "flags": 0,
                }
            ],
            "threads": [
                self._thread(JOINED_THREAD_ID, "deploys", joined=True),
                self._thread(OTHER_THREAD_ID, "lunch", joined=False),
            ],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def _is_dm(self, channel_id: int) -> bool:
        return channel_id not in (CHANNEL_ID, JOINED_THREAD_ID, OTHER_THREAD_ID)

    # -- REST ----------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> tuple[Any, web.Response | None]:
        body: Any = None
        if request.can_read_body:
            try:
                body = await request.json()
            except ValueError:
                body = await request.text()
        path = request.path.removeprefix("/api/v10")
        auth = request.headers.get("Authorization")
        self.requests.append(Recorded(request.method, unquote(path), body, auth))
        self._touch()
        if auth != f"Bot {self.token}":
            return body, _error(401, "401: Unauthorized")
        return body, None

    async def _me(self, request: web.Request) -> web.Response:
        person = self.oauth.person(request.headers.get("Authorization"))
        if person is not None:  # a person's own token, from the console's sign-in
            return _json(person)
        _, denied = await self._record(request)
        return denied or _json({**BOT.payload(), "verified": True, "flags": 0})

    async def _guild_member(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        if denied:
            return denied
        user_id = int(request.match_info["user"])
        known = {u.id: u for u in (ALICE, MALLORY, ADMIN)}
        if request.match_info["guild"] != str(GUILD_ID) or user_id not in self.guild_members:
            return _error(404, "Unknown Member", code=10007)
        return _json(self._member(known[user_id], True))

    async def _application(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        return denied or _json(
            {
                "id": str(APPLICATION_ID),
                "name": "lorebot",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": {**ALICE.payload(), "id": str(OWNER_ID)},
                "verify_key": "0" * 64,
                "flags": self.application_flags,
                "team": None,
                "summary": "",
                "bot": BOT.payload(),
            }
        )

    async def _channel(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        if denied:
            return denied
        channel_id = int(request.match_info["channel"])
        if self._is_dm(channel_id):
            return _json({"id": str(channel_id), "type": 1, "recipients": [ALICE.payload()]})
        return _json(
            {"id": str(channel_id), "type": 0, "guild_id": str(GUILD_ID), "name": "general"}
        )

    async def _open_dm(self, request: web.Request) -> web.Response:
        """The DM with ``recipient_id``: its channel id is the person's id plus 7."""
        body, denied = await self._record(request)
        if denied:
            return denied
        people = {user.id: user for user in (ALICE, MALLORY, ADMIN)}
        person = people.get(int((body or {}).get("recipient_id") or 0))
        if person is None:
            return _error(400, "Invalid Recipient(s)", code=50033)
        return _json(
            {
                "id": str(person.dm_channel_id),
                "type": 1,
                "last_message_id": None,
                "flags": 0,
                "recipients": [person.payload()],
            }
        )

    def _message(self, posted: Posted) -> Body:
        data: Body = self.message_payload(
            posted.current, author=BOT, channel_id=posted.channel_id, message_id=posted.id
        )
        data["components"] = posted.components
        if self._is_dm(posted.channel_id):
            data["channel_id"] = str(posted.channel_id)
            data.pop("guild_id")
            data.pop("member")
        reference = posted.body.get("message_reference")
        if reference:
            data["type"] = 19
            data["message_reference"] = {
                "message_id": reference["message_id"],
                "channel_id": str(posted.channel_id),
            }
        return data

    async def _create_message(self, request: web.Request) -> web.Response:
        body, denied = await self._record(request)
        if denied:
            return denied
        channel_id = int(request.match_info["channel"])
        if channel_id in self.refused_posts:
            status, code, message = self.refused_posts[channel_id]
            return _error(status, message, code=code)
        content = body.get("content") if isinstance(body, dict) else None
        if not content or len(content) > 2000 or not _valid_components(body):
            return _error(400, "Invalid Form Body", code=50035)
        posted = Posted(next(self._ids), channel_id, body)
        self.posted.append(posted)
        data = self._message(posted)
        if self.echo:
            await self.dispatch("MESSAGE_CREATE", data)
        return _json(data)

    def _find(self, request: web.Request) -> Posted | None:
        message_id = int(request.match_info["message"])
        return next((p for p in self.posted if p.id == message_id), None)

    async def _edit(self, request: web.Request) -> web.Response:
        body, denied = await self._record(request)
        if denied:
            return denied
        posted = self._find(request)
        if posted is None:
            return _error(404, "Unknown Message", code=10008)
        if self.refused_edits:
            status, code, message = self.refused_edits.pop(0)
            return _error(status, message, code=code)
        if not isinstance(body, dict) or len(str(body.get("content", ""))) > 2000:
            return _error(400, "Invalid Form Body", code=50035)
        if not _valid_components(body):
            return _error(400, "Invalid Form Body", code=50035)
        posted.edits.append(body)
        self._touch()
        return _json({**self._message(posted), "edited_timestamp": _now()})

    async def _add_reaction(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        if denied:
            return denied
        posted = self._find(request)
        if posted is None:
            return _error(404, "Unknown Message", code=10008)
        emoji = unquote(request.match_info["emoji"])
        posted.reactions.append(emoji)
        self._touch()
        if self.echo:
            await self.react(posted.id, emoji, user=BOT)
        return web.Response(status=204)

    async def _typing(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        if denied:
            return denied
        if int(request.match_info["channel"]) in self.refused_typing:
            return _error(403, "Missing Permissions", code=50013)
        return web.Response(status=204)

    async def _sync_commands(self, request: web.Request) -> web.Response:
        body, denied = await self._record(request)
        if denied:
            return denied
        if int(request.match_info["app"]) != APPLICATION_ID:
            return _error(403, "Missing Access", code=50001)
        if self.refused_sync is not None:
            status, code, message = self.refused_sync
            return _error(status, message, code=code)
        guild = request.match_info.get("guild")
        guild_id = None if guild is None else int(guild)
        if not isinstance(body, list):
            return _error(400, "Invalid Form Body", code=50035)
        self.command_syncs.append(CommandSync(guild_id, body))
        self._touch()
        created: list[Body] = []
        for index, command in enumerate(body):
            saved = {
                **command,
                "id": str(APPLICATION_ID + 100 + index),
                "application_id": str(APPLICATION_ID),
                "version": str(next(self._ids)),
            }
            if guild_id is not None:
                saved["guild_id"] = str(guild_id)
            created.append(saved)
        self.registered[guild_id] = created
        return _json(created)

    async def _registered_commands(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        return denied or _json(self.registered.get(None, []))

    async def _delete_command(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        if denied:
            return denied
        kept = [
            c for c in self.registered.get(None, []) if c["id"] != request.match_info["command"]
        ]
        if len(kept) == len(self.registered.get(None, [])):
            return _error(404, "Unknown application command", code=10063)
        self.registered[None] = kept
        return web.Response(status=204)

    async def _record_webhook(self, request: web.Request) -> tuple[Any, Body | None]:
        """Record a call made with an interaction's token (no Authorization: the token in
        the path is the credential); the interaction it belongs to, if the token is known."""
        body: Any = await request.json() if request.can_read_body else None
        path = request.path.removeprefix("/api/v10")
        auth = request.headers.get("Authorization")
        self.requests.append(Recorded(request.method, unquote(path), body, auth))
        self._touch()
        return body, self._interactions.get(unquote(request.match_info["token"]))

    async def _callback(self, request: web.Request) -> web.Response:
        body, interaction = await self._record_webhook(request)
        if interaction is None or interaction["id"] != request.match_info["id"]:
            return _error(404, "Unknown interaction", code=10062)
        interaction_id = int(interaction["id"])
        if any(c.interaction_id == interaction_id for c in self.callbacks):
            return _error(400, "Interaction has already been acknowledged.", code=40060)
        flags = int((body.get("data") or {}).get("flags", 0))
        self.callbacks.append(Callback(interaction_id, int(body["type"]), flags))
        self._touch()
        return _json(
            {
                "interaction": {
                    "id": str(interaction_id),
                    "type": 2,
                    "response_message_id": str(next(self._ids)),
                    "response_message_loading": body["type"] == 5,
                    "response_message_ephemeral": bool(flags & 64),
                },
                "resource": {"type": body["type"]},
            }
        )

    async def _followup(self, request: web.Request) -> web.Response:
        body, interaction = await self._record_webhook(request)
        if interaction is None or int(request.match_info["app"]) != APPLICATION_ID:
            return _error(404, "Unknown Webhook", code=10015)
        interaction_id = int(interaction["id"])
        if not any(c.interaction_id == interaction_id for c in self.callbacks):
            return _error(404, "Unknown Webhook", code=10015)  # not acknowledged yet
        content = str(body.get("content") or "")
        if not content or len(content) > 2000:
            return _error(400, "Invalid Form Body", code=50035)
        flags = int(body.get("flags", 0))
        self.followups.append(FollowUp(interaction_id, content, flags))
        self._touch()
        message = self.message_payload(
            content, author=BOT, channel_id=int(interaction["channel"]["id"])
        )
        return _json({**message, "flags": flags, "webhook_id": str(APPLICATION_ID)})

    async def _unknown(self, request: web.Request) -> web.Response:
        _, denied = await self._record(request)
        return denied or _error(404, "404: Not Found")


@pytest_asyncio.fixture(name="fake_discord")
async def fake_discord_fixture() -> AsyncIterator[FakeDiscord]:
    """A started ``FakeDiscord``; closed after the test."""
    fake = FakeDiscord()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
