"""A fake Slack: Web API and Socket Mode websocket on 127.0.0.1, for the real slack-sdk.

Point ``AsyncWebClient(base_url=fake.api_url)`` (or the adapter's ``api_base_url``) at it.
It records every call, checks ``Authorization: Bearer xoxb-…`` (``xapp-…`` for
``apps.connections.open``), reads JSON, form and query parameters, and keeps the messages
the bot posted, with their edits and reactions::

    fake.fail("chat.postMessage", "not_in_channel")   # the next such call is refused
    release = fake.hold("users.info")                 # such calls wait for release.set()
    fake.rate_limit("chat.postMessage", retry_after=0) # the next such call gets HTTP 429
    body = fake.app_mention("<@UBOT> hi", user="UALICE", channel="C1")
    await fake.push(body)                    # over the websocket; waits for the ack
    await fake.wait_for(lambda: fake.posts)  # poll with a deadline

``event_body`` builders return Events API ``event_callback`` bodies; ``push`` wraps one in a
Socket Mode envelope. The same body can be POSTed to an HTTP Events endpoint (see ``sign``).

A slash command goes either way too, and its ``response_url`` points here::

    command = fake.slash_command("recall deploys", user="UALICE", channel="C1")
    await fake.push(command, envelope_type="slash_commands")       # Socket Mode
    status = await post_form(url, command, secret)                  # HTTP, form-encoded

Streamed replies (``chat.startStream``/``appendStream``/``stopStream``) become posts whose
``stream`` holds each piece; ``chat.update`` refuses a post still streaming, as Slack does.
Ephemeral answers, through ``response_url`` or ``chat.postEphemeral``, land in ``ephemerals``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import urllib.parse
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest_asyncio
from aiohttp import WSMsgType, web
from slack_sdk.signature import SignatureVerifier

from tests.fakes.slack_openid import SlackOpenID
from tests.support.polling import HANG_GUARD_S

__all__ = ["Call", "Ephemeral", "FakeSlack", "Post", "fake_slack_fixture", "post_form", "sign"]

Body = dict[str, Any]

BOT_TOKEN = "xoxb-1111-2222-fake-bot-token"
APP_TOKEN = "xapp-1-A1-3333-fake-app-token"
TEAM = "T1"
BOT_USER = "UBOT"
BOT_ID = "BBOT"
ALL_SCOPES = (
    "app_mentions:read,channels:history,chat:write,commands,groups:history,im:history,im:read,"
    "im:write,"
    "reactions:read,reactions:write,users:read"
)


@dataclass(frozen=True)
class Call:
    """One Web API request: the method, its parameters, and the token it carried."""

    method: str
    params: Body
    token: str | None


@dataclass
class Post:
    """A message the bot posted, as Slack now shows it."""

    channel: str
    ts: str
    text: str
    thread_ts: str | None
    edits: list[str] = field(default_factory=list)
    reactions: list[str] = field(default_factory=list)
    stream: list[str] = field(default_factory=list)  # markdown pieces, when streamed
    streaming: bool = False
    blocks: list[Body] = field(default_factory=list)  # Block Kit, as last posted or updated

    @property
    def buttons(self) -> list[Body]:
        """The buttons of the message's actions blocks."""
        return [e for b in self.blocks if b.get("type") == "actions" for e in b["elements"]]

    def button(self, label: str) -> Body:
        return next(b for b in self.buttons if b["text"]["text"] == label)

    @property
    def current(self) -> str:
        return self.edits[-1] if self.edits else self.text


@dataclass(frozen=True)
class Ephemeral:
    """A message only ``user`` sees: through a command's ``response_url`` (``via`` "url",
    with the body Slack got) or ``chat.postEphemeral`` (``via`` "api")."""

    user: str
    channel: str
    text: str
    via: str
    body: Body


def sign(
    secret: str, body: str, timestamp: int | None = None, content_type: str = "application/json"
) -> dict[str, str]:
    """The headers Slack signs an HTTP event with (a stale or wrong one with the arguments)."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    return {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
        "Content-Type": content_type,
    }


async def post_form(url: str, fields: Body, secret: str) -> int:
    """POST ``fields`` form-encoded and signed, as Slack sends a slash command in HTTP mode;
    the response status (200 is Slack's acknowledgement)."""
    body = urllib.parse.urlencode(fields)
    headers = sign(secret, body, content_type="application/x-www-form-urlencoded")
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as resp:
        return resp.status


def _blocks(raw: Any) -> list[Body] | None:
    """Block Kit blocks as Slack reads them (a JSON string from a form), or None for what
    Slack refuses with `invalid_blocks`: a section over 3,000 characters, a button's label
    over 75 or value over 2,000, an action_id over 255 or repeated in its block."""
    blocks = json.loads(raw) if isinstance(raw, str) else (raw or [])
    if not isinstance(blocks, list) or len(blocks) > 50:
        return None
    for block in blocks:
        if block.get("type") == "section" and len(block["text"]["text"]) > 3000:
            return None
        if block.get("type") == "actions":
            elements = block.get("elements") or []
            ids = [e.get("action_id", "") for e in elements]
            if len(elements) > 25 or len(set(ids)) < len(ids):
                return None
            for e in elements:
                if (
                    len(e["text"]["text"]) > 75
                    or len(e.get("value", "")) > 2000
                    or len(e.get("action_id", "")) > 255
                    or e.get("style", "primary") not in ("primary", "danger")
                ):
                    return None
    return blocks


def _json(data: Body, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(data, status=status, headers=headers)


@dataclass
class FakeSlack:
    """Slack's Web API and Socket Mode for one workspace with one bot user."""

    bot_token: str = BOT_TOKEN
    app_token: str = APP_TOKEN
    team_id: str = TEAM
    bot_user_id: str = BOT_USER
    bot_id: str = BOT_ID
    scopes: str = ALL_SCOPES
    users: dict[str, str] = field(
        default_factory=lambda: {
            "UALICE": "alice",
            "UBOB": "bob",
            "UMALLORY": "mallory",
            "UADMIN": "admin",
        }
    )

    # Number the bot's messages per channel, so two channels hold messages with the same ts.
    ts_per_channel: bool = False
    # The channels each person is in, as users.conversations lists them.
    member_of: dict[str, list[str]] = field(default_factory=lambda: {"UALICE": ["C1"]})

    calls: list[Call] = field(default_factory=list, init=False)
    posts: list[Post] = field(default_factory=list, init=False)
    ephemerals: list[Ephemeral] = field(default_factory=list, init=False)
    _commands: dict[str, tuple[str, str]] = field(default_factory=dict, init=False, repr=False)
    acks: list[Body] = field(default_factory=list, init=False)
    connections: int = field(default=0, init=False)

    _failures: dict[str, deque[tuple[int, Body, dict[str, str]]]] = field(
        default_factory=dict, init=False, repr=False
    )
    _holds: dict[str, asyncio.Event] = field(default_factory=dict, init=False, repr=False)
    _sockets: list[web.WebSocketResponse] = field(default_factory=list, init=False, repr=False)
    _changed: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _runner: web.AppRunner | None = field(default=None, init=False, repr=False)
    _port: int | None = field(default=None, init=False, repr=False)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), init=False)
    openid: SlackOpenID = field(init=False)

    def __post_init__(self) -> None:
        self.openid = SlackOpenID(self.team_id)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/link", self._link)
        app.router.add_get("/openid/connect/authorize", self.openid.authorize)
        app.router.add_post("/respond/{command}", self._respond)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        for ws in list(self._sockets):
            await ws.close()
        await runner.cleanup()

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeSlack is not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        """The Web API base URL, with the trailing ``/api/`` slack-sdk needs."""
        return f"{self.url}/api/"

    # -- scripting -------------------------------------------------------------------------

    def fail(self, method: str, error: str, **extra: Any) -> None:
        """Refuse the next call to ``method`` with ``{"ok": false, "error": error, **extra}``."""
        body = {"ok": False, "error": error, **extra}
        self._failures.setdefault(method, deque()).append((200, body, {}))

    def hold(self, method: str) -> asyncio.Event:
        """Keep calls to ``method`` waiting until the returned event is set."""
        return self._holds.setdefault(method, asyncio.Event())

    def rate_limit(self, method: str, retry_after: int = 0) -> None:
        """Answer the next call to ``method`` with HTTP 429 and ``Retry-After``."""
        body = {"ok": False, "error": "ratelimited"}
        headers = {"Retry-After": str(retry_after)}
        self._failures.setdefault(method, deque()).append((429, body, headers))

    # -- events ----------------------------------------------------------------------------

    def _next(self) -> int:
        return next(self._ids)

    def new_ts(self) -> str:
        n = self._next()
        return f"{1_700_000_000 + n}.{n:06d}"

    def event_body(self, event: Body, *, event_id: str | None = None) -> Body:
        """An Events API ``event_callback`` body around ``event``."""
        return {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "api_app_id": "A1",
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"Ev{self._next():08d}",
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
        }

    def app_mention(
        self, text: str, *, user: str = "UALICE", channel: str = "C1", thread_ts: str | None = None
    ) -> Body:
        ts = self.new_ts()
        event = {
            "type": "app_mention",
            "user": user,
            "text": text,
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
            "team": self.team_id,
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        return self.event_body(event)

    def message(
        self,
        text: str,
        *,
        user: str = "UALICE",
        channel: str = "D1",
        channel_type: str | None = None,
        thread_ts: str | None = None,
        **extra: Any,
    ) -> Body:
        """A ``message`` event; a ``D…`` channel is a DM (``message.im``)."""
        ts = self.new_ts()
        event: Body = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
            "team": self.team_id,
            "channel_type": channel_type or ("im" if channel.startswith("D") else "channel"),
            **extra,
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        return self.event_body(event)

    def reaction(self, post: Post, name: str, *, user: str = "UALICE") -> Body:
        """A ``reaction_added`` event for a message the bot posted."""
        return self.reaction_to(post.channel, post.ts, name, user=user)

    def reaction_to(
        self, channel: str, ts: str, name: str, *, user: str = "UALICE", author: str | None = None
    ) -> Body:
        """A ``reaction_added`` event for any message (by ``author``, the bot by default)."""
        return self.event_body(
            {
                "type": "reaction_added",
                "user": user,
                "reaction": name,
                "item_user": author or self.bot_user_id,
                "item": {"type": "message", "channel": channel, "ts": ts},
                "event_ts": self.new_ts(),
            }
        )

    def slash_command(
        self,
        text: str,
        *,
        user: str = "UALICE",
        channel: str = "C1",
        channel_name: str | None = None,
        response_url: bool = True,
    ) -> Body:
        """A ``/lorebot`` payload as Slack sends it (its fields are all strings); its
        ``response_url`` answers here, into ``ephemerals``."""
        n = self._next()
        trigger = f"{n}.{n * 7}.fake{n:04x}"
        fields: Body = {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "team_domain": "lore-team",
            "channel_id": channel,
            "channel_name": channel_name
            or ("directmessage" if channel.startswith("D") else f"chan-{channel.lower()}"),
            "user_id": user,
            "user_name": self.users.get(user, user),
            "command": "/lorebot",
            "text": text,
            "api_app_id": "A1",
            "is_enterprise_install": "false",
            "trigger_id": trigger,
        }
        if response_url:
            self._commands[str(n)] = (user, channel)
            fields["response_url"] = f"{self.url}/respond/{n}"
        return fields

    def block_actions(
        self, post: Post, label: str, *, user: str = "UALICE", value: str | None = None
    ) -> Body:
        """A ``block_actions`` payload for a click by ``user`` on the button ``label`` of a
        message the bot posted (carrying ``value`` instead of the button's own when given),
        in Slack's documented shape; its ``response_url`` answers into ``ephemerals``."""
        n = self._next()
        button = post.button(label)
        self._commands[str(n)] = (user, post.channel)
        message: Body = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "ts": post.ts,
            "text": post.current,
            "blocks": post.blocks,
        }
        if post.thread_ts:
            message["thread_ts"] = post.thread_ts
        return {
            "type": "block_actions",
            "user": {
                "id": user,
                "username": self.users.get(user, user),
                "name": self.users.get(user, user),
                "team_id": self.team_id,
            },
            "api_app_id": "A1",
            "token": "legacy-verification-token",
            "container": {
                "type": "message",
                "message_ts": post.ts,
                "channel_id": post.channel,
                "is_ephemeral": False,
            },
            "trigger_id": f"{n}.{n * 7}.click{n:04x}",
            "team": {"id": self.team_id, "domain": "lore-team"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": post.channel, "name": f"chan-{post.channel.lower()}"},
            "message": message,
            "state": {"values": {}},
            "response_url": f"{self.url}/respond/{n}",
            "actions": [
                {
                    "action_id": button["action_id"],
                    "block_id": "lorebot_decision",
                    "text": button["text"],
                    "value": button["value"] if value is None else value,
                    **({"style": button["style"]} if "style" in button else {}),
                    "type": "button",
                    "action_ts": f"{1_700_000_000 + n}.{n:06d}",
                }
            ],
        }

    async def push(
        self,
        body: Body,
        *,
        envelope_type: str = "events_api",
        retry_attempt: int | None = None,
        retry_reason: str | None = None,
        within: float = HANG_GUARD_S,
        to: int = -1,
    ) -> str:
        """Send ``body`` over a Socket Mode websocket (the latest connected unless `to`
        names one, by the order they connected) and wait for its ack; the envelope id."""
        await self.wait_for(lambda: self._sockets, within=within)
        envelope_id = str(uuid.uuid4())
        envelope: Body = {
            "envelope_id": envelope_id,
            "type": envelope_type,
            "payload": body,
            "accepts_response_payload": envelope_type == "slash_commands",
        }
        if retry_attempt is not None:
            envelope["retry_attempt"] = retry_attempt
            envelope["retry_reason"] = retry_reason or "timeout"
        await self._sockets[to].send_json(envelope)
        await self.wait_for(lambda: envelope_id in self.acked, within=within)
        return envelope_id

    async def refresh(self) -> None:
        """Ask the client to reconnect, as Slack does every few hours (``disconnect``)."""
        await self.wait_for(lambda: self._sockets)
        await self._sockets[-1].send_json(
            {"type": "disconnect", "reason": "refresh_requested", "debug_info": {"host": "fake"}}
        )

    @property
    def acked(self) -> list[str]:
        return [str(ack.get("envelope_id")) for ack in self.acks]

    # -- inspection ------------------------------------------------------------------------

    def calls_to(self, method: str) -> list[Body]:
        return [call.params for call in self.calls if call.method == method]

    def post(self, ts: str) -> Post:
        return next(p for p in self.posts if p.ts == ts)

    async def wait_for(self, condition: Callable[[], object], within: float = HANG_GUARD_S) -> None:
        """Wait up to ``within`` s until ``condition()`` is true, waking on every request."""
        async with asyncio.timeout(within):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

    def _touch(self) -> None:
        self._changed.set()

    # -- Web API ---------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: Body = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(await request.post())
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        self.calls.append(Call(method, params, token))
        self._touch()
        headers = {"x-oauth-scopes": self.scopes}

        if method == "openid.connect.token":  # the console's sign-in: no bot token
            return _json(self.openid.token(params), headers=headers)
        if method == "openid.connect.userInfo":
            return _json(self.openid.user_info(token), headers=headers)
        expected = self.app_token if method == "apps.connections.open" else self.bot_token
        if token is None:
            return _json({"ok": False, "error": "not_authed"}, headers=headers)
        if token != expected:
            return _json({"ok": False, "error": "invalid_auth"}, headers=headers)
        held = self._holds.get(method)
        if held is not None:
            await held.wait()
        queued = self._failures.get(method)
        if queued:
            status, body, extra = queued.popleft()
            return _json(body, status=status, headers={**headers, **extra})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return _json({"ok": False, "error": "unknown_method"}, headers=headers)
        result: Body = handler(params)
        return _json(result, headers=headers)

    def _m_auth_test(self, params: Body) -> Body:
        return {
            "ok": True,
            "url": "https://lore-team.slack.com/",
            "team": "Lore Team",
            "user": "lorebot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_apps_connections_open(self, params: Body) -> Body:
        return {"ok": True, "url": f"ws://127.0.0.1:{self._port}/link?ticket=fake"}

    def _m_users_conversations(self, params: Body) -> Body:
        channels = self.member_of.get(str(params.get("user")), [])
        return {
            "ok": True,
            "channels": [{"id": c, "is_member": True} for c in channels],
            "response_metadata": {"next_cursor": ""},
        }

    def _m_users_info(self, params: Body) -> Body:
        user_id = str(params.get("user"))
        name = self.users.get(user_id)
        if name is None:
            return {"ok": False, "error": "user_not_found"}
        return {
            "ok": True,
            "user": {
                "id": user_id,
                "team_id": self.team_id,
                "name": name,
                "real_name": name.title(),
                "is_bot": False,
                "profile": {"display_name": name, "real_name": name.title()},
            },
        }

    def _posted(self, channel: Any, ts: Any) -> list[Post]:
        """A message is named by its channel and ts: a ts is unique only within a channel."""
        return [p for p in self.posts if p.channel == channel and p.ts == ts]

    def _post_ts(self, channel: str) -> str:
        if not self.ts_per_channel:
            return self.new_ts()
        n = sum(1 for p in self.posts if p.channel == channel) + 1
        return f"{1_800_000_000 + n}.{n:06d}"

    def _m_chat_postMessage(self, params: Body) -> Body:
        channel, text = str(params.get("channel", "")), str(params.get("text", ""))
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if len(text) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        blocks = _blocks(params.get("blocks"))
        if blocks is None:
            return {"ok": False, "error": "invalid_blocks"}
        thread_ts = params.get("thread_ts")
        post = Post(channel, self._post_ts(channel), text, str(thread_ts) if thread_ts else None)
        post.blocks = blocks
        self.posts.append(post)
        message = {"type": "message", "text": text, "user": self.bot_user_id, "ts": post.ts}
        return {"ok": True, "channel": channel, "ts": post.ts, "message": message}

    def _m_chat_update(self, params: Body) -> Body:
        found = self._posted(params.get("channel"), params.get("ts"))
        if not found:
            return {"ok": False, "error": "message_not_found"}
        if found[0].streaming:
            return {"ok": False, "error": "streaming_state_conflict"}
        blocks = _blocks(params.get("blocks"))
        if blocks is None:
            return {"ok": False, "error": "invalid_blocks"}
        if "blocks" in params:  # left out, the message keeps its blocks
            found[0].blocks = blocks
        found[0].edits.append(str(params.get("text", "")))
        return {"ok": True, "channel": found[0].channel, "ts": found[0].ts, "text": found[0].text}

    def _m_conversations_open(self, params: Body) -> Body:
        """A DM with one person: its channel id is ``D`` and the person's id after ``U``."""
        users = str(params.get("users", ""))
        if not users or "," in users:
            return {"ok": False, "error": "invalid_arguments"}
        if users not in self.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "channel": {"id": "D" + users.removeprefix("U")}}

    def _m_chat_postEphemeral(self, params: Body) -> Body:
        channel, user = str(params.get("channel", "")), str(params.get("user", ""))
        if not channel or not user:
            return {"ok": False, "error": "invalid_arguments"}
        self.ephemerals.append(Ephemeral(user, channel, str(params.get("text", "")), "api", params))
        return {"ok": True, "message_ts": self.new_ts()}

    def _m_chat_startStream(self, params: Body) -> Body:
        channel, thread_ts = str(params.get("channel", "")), params.get("thread_ts")
        if not channel or not thread_ts:
            return {"ok": False, "error": "invalid_arguments"}
        if not channel.startswith("D"):  # outside DMs Slack wants to know who reads it
            for name in ("recipient_user_id", "recipient_team_id"):
                if not params.get(name):
                    return {"ok": False, "error": f"missing_{name}"}
        text = str(params.get("markdown_text", ""))
        post = Post(channel, self._post_ts(channel), text, str(thread_ts), streaming=True)
        post.stream.append(text)
        self.posts.append(post)
        return {"ok": True, "channel": channel, "ts": post.ts}

    def _m_chat_appendStream(self, params: Body) -> Body:
        return self._streamed(params, stop=False)

    def _m_chat_stopStream(self, params: Body) -> Body:
        return self._streamed(params, stop=True)

    def _streamed(self, params: Body, *, stop: bool) -> Body:
        found = self._posted(params.get("channel"), params.get("ts"))
        if not found:
            return {"ok": False, "error": "message_not_found"}
        post = found[0]
        if not post.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        text = params.get("markdown_text")
        if text is None and not stop:
            return {"ok": False, "error": "invalid_arguments"}
        if text:
            post.stream.append(str(text))
            post.text += str(text)
        post.streaming = not stop
        return {"ok": True, "channel": post.channel, "ts": post.ts}

    def _m_reactions_add(self, params: Body) -> Body:
        found = self._posted(params.get("channel"), params.get("timestamp"))
        if not found:
            return {"ok": False, "error": "message_not_found"}
        name = str(params.get("name"))
        if name in found[0].reactions:
            return {"ok": False, "error": "already_reacted"}
        found[0].reactions.append(name)
        return {"ok": True}

    def _m_assistant_threads_setStatus(self, params: Body) -> Body:
        if not params.get("channel_id") or not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    async def _respond(self, request: web.Request) -> web.Response:
        """A command's ``response_url``: ``ephemeral`` reaches only the person who typed it."""
        body: Body = await request.json()
        self.calls.append(Call("response_url", body, None))
        self._touch()
        known = self._commands.get(request.match_info["command"])
        if known is None:
            return web.Response(status=404, text="invalid_url")
        user, channel = known
        if body.get("response_type", "ephemeral") != "ephemeral":
            self.posts.append(Post(channel, self.new_ts(), str(body.get("text", "")), None))
        else:
            self.ephemerals.append(Ephemeral(user, channel, str(body.get("text", "")), "url", body))
        return web.Response(text="ok")

    # -- Socket Mode -----------------------------------------------------------------------

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections += 1
        self._sockets.append(ws)
        self._touch()
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self._sockets),
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": "A1"},
            }
        )
        try:
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    self.acks.append(json.loads(frame.data))
                    self._touch()
        finally:
            self._sockets.remove(ws)
            self._touch()
        return ws


@pytest_asyncio.fixture(name="fake_slack")
async def fake_slack_fixture() -> AsyncIterator[FakeSlack]:
    """A started fake Slack, closed after the test."""
    fake = FakeSlack()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
