"""The `/lorebot` slash command on Slack: acknowledged at once, handed to the core as a
`SlashCommand`, and answered to the person who typed it alone (ephemerally).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from adapters.base import Answer, ConversationRef, Event, SlashCommand, UserRef
from adapters.slack.text import fit_mrkdwn, to_plain

if TYPE_CHECKING:
    from adapters.slack.users import SlackUser

_log = logging.getLogger(__name__)

COMMAND = "/lorebot"


class CommandHost(Protocol):
    """What the slash command needs of the Slack adapter."""

    platform: str
    bot_user_id: str | None
    team_id: str | None

    async def hand_over(self, convert: Callable[[], Awaitable[Event | None]], what: str) -> None:
        """Turn a payload into the core's event and give it to the sink."""

    async def fetch_names(self, raw: str, author_id: str) -> tuple[SlackUser, dict[str, str]]:
        """The author and the display names of the people `raw` mentions."""

    async def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        """Post mrkdwn `text` in `channel` for `user` alone (chat.postEphemeral)."""


# Hand-overs of commands under way (a reference, so none is collected unfinished).
_handing_over: set[asyncio.Task[None]] = set()


def register_command(app: AsyncApp, host: CommandHost) -> None:
    """Route `/lorebot` to a listener that acknowledges it at once (Slack waits 3 s at most,
    and bolt answers Slack once the listener returns), handing the command over meanwhile."""

    async def on_command(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        trigger = body.get("trigger_id")
        # Slack never sends a command again: the hand-over need not hold back the ack.
        handed = asyncio.create_task(
            host.hand_over(lambda: to_command(host, body, respond), f"command {trigger}")
        )
        _handing_over.add(handed)
        handed.add_done_callback(_handing_over.discard)

    app.command(COMMAND)(on_command)


async def to_command(
    host: CommandHost, body: Mapping[str, Any], respond: AsyncRespond
) -> SlashCommand | None:
    """The core's `SlashCommand` for a `/lorebot …` payload; its `answer` reaches the
    person who typed it, alone."""
    user_id, channel = body.get("user_id"), body.get("channel_id")
    if not (user_id and channel):
        return None
    trigger = str(body.get("trigger_id") or "")
    event_id = f"command:{trigger or uuid.uuid4().hex}"  # Slack always sends one
    raw = str(body.get("text") or "")
    author, names = await host.fetch_names(raw, user_id)
    is_dm = channel.startswith("D") or body.get("channel_name") == "directmessage"
    team_id = body.get("team_id") or host.team_id
    return SlashCommand(
        ConversationRef(host.platform, channel, is_dm, None, team_id),
        UserRef(host.platform, user_id, author.name, is_bot=author.is_bot),
        to_plain(raw, bot_user_id=host.bot_user_id, names=names),
        trigger,
        event_id,
        mentions_bot=True,
        answer=answer_to(host, channel, user_id, respond),
    )


def answer_to(host: CommandHost, channel: str, user: str, respond: AsyncRespond) -> Answer:
    """Answer one person ephemerally: through the command's response_url, else (none, or
    refused) with chat.postEphemeral."""

    async def answer(text: str) -> None:
        body = fit_mrkdwn(text)
        if respond.response_url and await _respond(respond, body):
            return
        await host.post_ephemeral(channel, user, body)

    return answer


async def _respond(respond: AsyncRespond, body: str) -> bool:
    """Post `body` to the command's response_url; False when that failed."""
    try:
        response = await respond(text=body, response_type="ephemeral", replace_original=False)
    except (aiohttp.ClientError, TimeoutError) as exc:
        _log.warning(
            "could not answer a Slack command through its response_url (%s); "
            "using chat.postEphemeral",
            exc or type(exc).__name__,
        )
        return False
    if response.status_code == 200:
        return True
    _log.warning(
        "Slack refused a command's response_url (HTTP %d: %.80s); using chat.postEphemeral",
        response.status_code,
        response.body,
    )
    return False
