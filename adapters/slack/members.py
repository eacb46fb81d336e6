"""Where a person is on Slack, for the web console's sign-in: the bot's workspace, and the
channels they are in (`users.conversations`, scopes channels:read and groups:read)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.errors import AdapterError

_log = logging.getLogger(__name__)

# Channels asked for at most: a person in more sees the notes of these.
MAX_CHANNELS = 1000

Call = Callable[[str, Awaitable[AsyncSlackResponse]], Awaitable[AsyncSlackResponse]]


async def member_channels(web: AsyncWebClient, call: Call, user_id: str) -> tuple[str, ...]:
    """The channels `user_id` is in, public and private, unarchived; none when the app may
    not list them (a missing scope is logged by `call`)."""
    found: list[str] = []
    cursor: str | None = None
    try:
        while len(found) < MAX_CHANNELS:
            response = await call(
                "users.conversations",
                web.users_conversations(
                    user=user_id,
                    types="public_channel,private_channel",
                    exclude_archived=True,
                    limit=200,
                    cursor=cursor,
                ),
            )
            found += [str(c["id"]) for c in response.get("channels") or [] if c.get("id")]
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                break
    except AdapterError:
        _log.warning("the console shows %s no channel notes: Slack did not list them", user_id)
        return ()
    return tuple(found[:MAX_CHANNELS])
