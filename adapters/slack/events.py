"""Slack's Events API payloads turned into lorebot's platform-neutral events, in one place:
which messages are for the bot, who wrote them and where it answers, and the reactions to
its cards."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final, Protocol

from adapters.base import (
    ALWAYS,
    APPROVE,
    REJECT,
    ConversationRef,
    Event,
    Message,
    ReactionEvent,
    UserRef,
)
from adapters.slack.text import mentioned_user_ids, to_plain
from adapters.slack.users import SlackUser

PLATFORM: Final = "slack"

_EMOJI = {"white_check_mark": APPROVE, "x": REJECT, "infinity": ALWAYS}
_MESSAGE_SUBTYPES = {None, "file_share", "thread_broadcast"}

THREAD_MEMORY = 10_000


class BotThreads:
    """The threads the bot replied in (the latest `THREAD_MEMORY`), whose replies reach it
    without a mention."""

    def __init__(self, size: int = THREAD_MEMORY) -> None:
        self._size = size
        self._threads: OrderedDict[tuple[str, str], None] = OrderedDict()

    def add(self, channel: str, thread_ts: str) -> None:
        key = (channel, thread_ts)
        self._threads[key] = None
        self._threads.move_to_end(key)
        while len(self._threads) > self._size:
            self._threads.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        return key in self._threads


class EventHost(Protocol):
    """What turning a payload into an event needs of the Slack adapter."""

    team_id: str | None
    bot_user_id: str | None
    workspace_url: str
    threads: BotThreads

    async def fetch_names(self, raw: str, author_id: str) -> tuple[SlackUser, dict[str, str]]:
        """The author and the display names of the people `raw` mentions."""

    def known_user(self, user_id: str) -> SlackUser | None:
        """The person, if already looked up; never calls Slack."""


async def to_event(body: Mapping[str, Any], host: EventHost) -> Event | None:
    """The core's event for an Events API callback, or None when it is not for the bot."""
    event = body.get("event")
    if body.get("type") != "event_callback" or not isinstance(event, dict):
        return None
    event_id = str(body.get("event_id") or "")
    team_id = body.get("team_id") or event.get("team") or host.team_id
    kind = event.get("type")
    if kind == "app_mention":
        thread_id = event.get("thread_ts") or event.get("ts")
        return await _message(event, event_id, team_id, host, is_dm=False, thread_id=thread_id)
    if kind == "message":
        route = _route(event, host)
        if route is None:
            return None
        is_dm, thread_id = route
        return await _message(event, event_id, team_id, host, is_dm=is_dm, thread_id=thread_id)
    if kind in ("reaction_added", "reaction_removed"):
        return _reaction(event, event_id, team_id, host, added=kind == "reaction_added")
    return None


def _route(event: Mapping[str, Any], host: EventHost) -> tuple[bool, str | None] | None:
    """Whether a `message` event is for the bot: (is_dm, thread to reply in), or None.

    In channels only replies in a thread the bot is part of count, and only when they do
    not mention the bot, because the `app_mention` event already covers those.
    """
    if event.get("subtype") not in _MESSAGE_SUBTYPES or event.get("hidden"):
        return None
    channel = str(event.get("channel") or "")
    thread_ts = event.get("thread_ts")
    if event.get("channel_type", "im" if channel.startswith("D") else "") == "im":
        return True, thread_ts
    if not thread_ts or thread_ts == event.get("ts"):
        return None
    if host.bot_user_id in mentioned_user_ids(str(event.get("text") or "")):
        return None
    in_bot_thread = (channel, thread_ts) in host.threads
    if in_bot_thread or event.get("parent_user_id") == host.bot_user_id:
        return False, thread_ts
    return None


async def _message(
    event: Mapping[str, Any],
    event_id: str,
    team_id: str | None,
    host: EventHost,
    *,
    is_dm: bool,
    thread_id: str | None,
) -> Message | None:
    user_id, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
    if not (user_id and channel and ts):
        return None
    raw = str(event.get("text") or "")
    author, names = await host.fetch_names(raw, user_id)
    text = to_plain(raw, bot_user_id=host.bot_user_id, names=names)
    is_bot = author.is_bot or bool(event.get("bot_id"))
    return Message(
        ConversationRef(PLATFORM, channel, is_dm, thread_id, team_id),
        UserRef(PLATFORM, user_id, author.name, is_bot=is_bot),
        text,
        str(ts),
        event_id,
        mentions_bot=True,
        link=permalink(host.workspace_url, channel, str(ts), thread_id),
    )


def _reaction(
    event: Mapping[str, Any], event_id: str, team_id: str | None, host: EventHost, *, added: bool
) -> ReactionEvent | None:
    item = event.get("item") or {}
    user_id, channel, ts = event.get("user"), item.get("channel"), item.get("ts")
    if item.get("type") != "message" or not (user_id and channel and ts):
        return None
    item_user = event.get("item_user")
    if item_user and host.bot_user_id and item_user != host.bot_user_id:
        return None  # only the bot's own messages can be cards
    name = str(event.get("reaction") or "").split("::", 1)[0]
    known = host.known_user(user_id)
    user = UserRef(
        PLATFORM,
        user_id,
        known.name if known else "",
        is_bot=user_id == host.bot_user_id or bool(known and known.is_bot),
    )
    conversation = ConversationRef(PLATFORM, channel, channel.startswith("D"), None, team_id)
    return ReactionEvent(conversation, user, _EMOJI.get(name, name), str(ts), event_id, added)


def permalink(workspace_url: str, channel: str, ts: str, thread_ts: str | None) -> str:
    """Slack's web link to a message (`https://team.slack.com/archives/C…/p…`), or "" when
    the workspace address is unknown."""
    if not workspace_url:
        return ""
    link = f"{workspace_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link
