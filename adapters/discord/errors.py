"""Discord failures in one place: why the gateway could not start, and what a refused REST
call means for the operator, each as one line that says what to fix."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Final, TypeVar

import discord

from adapters.base import AdapterConfigError, DeliveryError

# Refusals are logged as the adapter's, where operators look for Discord trouble.
_log = logging.getLogger("adapters.discord.adapter")

T = TypeVar("T")

PORTAL: Final = "https://discord.com/developers/applications"

BAD_TOKEN = (
    "Discord rejected the bot token: check LOREBOT_DISCORD__TOKEN (the token under Bot in "
    f"the developer portal, {PORTAL})"
)
ENABLE_INTENT = (
    f"enable it in the Discord developer portal ({PORTAL}) under your application → Bot → "
    "Privileged Gateway Intents → Message Content Intent"
)
MISSING_INTENT = f"Discord refused the privileged Message Content intent: {ENABLE_INTENT}"

INTERACTION_FIXES: Final = {
    10015: "the command's 15 minutes for answers ran out",
    10062: "the command was not acknowledged within Discord's 3 seconds",
    40060: "the command was acknowledged already",
}
"""What the operator can do about a refused answer to a command, by Discord error code."""


class DiscordStartError(AdapterConfigError):
    """Discord could not be connected (bad token, missing intent, unreachable); the message
    says what to fix and never contains the token."""


class DiscordRequestError(DeliveryError):
    """A REST call Discord refused; the message says what to fix."""

    def __init__(self, action: str, exc: discord.HTTPException, fix: str) -> None:
        super().__init__(f"Discord refused to {action} (HTTP {exc.status}, code {exc.code}): {fix}")
        self.status = exc.status
        self.code = exc.code


async def rest(action: str, channel_id: int, call: Awaitable[T]) -> T:
    """Await one REST call; a refusal is logged as one line saying what to fix and raised
    as `DiscordRequestError`. discord.py has already retried rate limits and 5xx answers."""
    try:
        return await call
    except discord.HTTPException as exc:
        failure = DiscordRequestError(action, exc, _fix(exc, channel_id))
        _log.error("%s", failure)
        raise failure from None


def _fix(exc: discord.HTTPException, channel_id: int) -> str:
    """What the operator can do about a refused call, in one sentence."""
    if exc.status == 401:
        return "the bot token was reset or revoked: update LOREBOT_DISCORD__TOKEN"
    fixes = {
        10003: f"channel {channel_id} does not exist any more",
        10008: "the message was deleted",
        50001: (
            f"lorebot cannot see channel {channel_id}: give it View Channels and Read Message "
            "History there"
        ),
        50007: "this person does not accept direct messages from lorebot",
        50013: (
            f"lorebot lacks a permission in channel {channel_id}: give it Send Messages (Send "
            "Messages in Threads for a thread), Add Reactions and Read Message History there"
        ),
        50083: f"thread {channel_id} is archived: unarchive it to continue there",
        **INTERACTION_FIXES,
    }
    return fixes.get(exc.code) or exc.text or "Discord gave no reason"


def describe(exc: BaseException) -> str:
    """A failed login in a few words: the HTTP status and reason, or the exception."""
    if isinstance(exc, discord.HTTPException):
        return f"HTTP {exc.status} {exc.text or exc.response.reason}".strip()
    return f"{type(exc).__name__}: {exc}"


def start_error(exc: BaseException | None, gateway: str) -> DiscordStartError:
    """One line for the operator about why the gateway gave up."""
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return DiscordStartError(MISSING_INTENT)
    if isinstance(exc, discord.ConnectionClosed):
        if exc.code == 4004:
            return DiscordStartError(BAD_TOKEN)
        return DiscordStartError(f"Discord closed the gateway connection with code {exc.code}")
    # Anything else means the connection itself failed; discord.py has logged the cause (and
    # may report it as an AttributeError, discord.py issue #10520).
    return DiscordStartError(
        f"could not connect to Discord's gateway at {gateway}; the cause is logged above"
    )
