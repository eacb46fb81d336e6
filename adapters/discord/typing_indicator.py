"""Discord's "lorebot is typing…" while a turn runs: discord.py repeats the trigger every
few seconds; a refusal only leaves it out. Discord has no status text, so the status
function a turn gets shows nothing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Final

import aiohttp
import discord

from adapters.base import ConversationRef, Status

_log = logging.getLogger(__name__)

TYPING_WAIT_S: Final = 2.0
"""How long a turn waits for Discord to take the first typing trigger before going on
without it."""


@contextlib.asynccontextmanager
async def typing_in(
    client: discord.Client | None, conversation: ConversationRef
) -> AsyncIterator[Status]:
    """The typing indicator in the conversation's channel while the block runs."""
    async with contextlib.AsyncExitStack() as stack:
        if client is not None:
            guild_id = int(conversation.team_id) if conversation.team_id else None
            channel = client.get_partial_messageable(
                int(conversation.channel_id), guild_id=guild_id
            )
            try:
                async with asyncio.timeout(TYPING_WAIT_S):
                    await stack.enter_async_context(channel.typing())
            except (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError) as exc:
                _log.debug("no typing indicator in channel %s: %r", channel.id, exc)
        yield _no_status


async def _no_status(text: str) -> None:
    """Discord shows no status text; the typing indicator says the bot is working."""
    return None
