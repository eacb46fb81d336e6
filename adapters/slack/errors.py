"""Slack Web API failures in one place: what to fix for each refusal, the scopes lorebot
needs, and slack-sdk's retries for drops, rate limits and server errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.base import DeliveryError

REQUIRED_SCOPES = (
    "app_mentions:read",
    "channels:history",
    "chat:write",
    "commands",
    "groups:history",
    "im:history",
    "im:write",
    "reactions:read",
    "reactions:write",
    "users:read",
)
"""The bot token scopes lorebot uses; a missing one is named at start."""

BOT_TOKEN_HELP = (
    "LOREBOT_SLACK__BOT_TOKEN (the Bot User OAuth Token, xoxb-…, under OAuth & Permissions)"
)
_AUTH_ERRORS = {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"}


class SlackRequestError(DeliveryError):
    """A Web API call Slack refused; the message says what to fix."""

    def __init__(self, method: str, error: str, fix: str) -> None:
        super().__init__(f"Slack {method} failed ({error}): {fix}")
        self.method = method
        self.error = error


def retry_handlers() -> list[AsyncRetryHandler]:
    """slack-sdk's own retries: connection drops, rate limits (honouring Retry-After), 5xx."""
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=2),
        AsyncRateLimitErrorRetryHandler(max_retry_count=3),
        AsyncServerErrorRetryHandler(max_retry_count=2),
    ]


def missing_scopes(granted_header: str | None) -> list[str]:
    """The required scopes absent from an `x-oauth-scopes` header value."""
    granted = {scope.strip() for scope in (granted_header or "").split(",")}
    return [scope for scope in REQUIRED_SCOPES if scope not in granted]


def describe_error(
    error: str, data: Mapping[str, Any], *, channel: str | None = None, bot_name: str = "lorebot"
) -> str:
    """What to fix when Slack answers `error`, in one sentence."""
    where = f"channel {channel}" if channel else "the channel"
    if error == "not_in_channel":
        return f"@{bot_name} is not a member of {where}: invite it there with /invite @{bot_name}"
    if error == "channel_not_found":
        return (
            f"{where} does not exist or @{bot_name} cannot see it: invite the bot to it "
            "(private channels also need the groups:history scope)"
        )
    if error == "missing_scope":
        needed = data.get("needed") or "a scope"
        return (
            f"the Slack app lacks the {needed} scope: add it under OAuth & Permissions → "
            "Bot Token Scopes, then reinstall the app to the workspace"
        )
    if error in _AUTH_ERRORS:
        return f"Slack rejected the bot token: check {BOT_TOKEN_HELP}"
    if error == "ratelimited":
        return "Slack kept rate-limiting lorebot after several retries; try again later"
    return f"Slack answered {error!r}"


def response_header(response: AsyncSlackResponse, name: str) -> str | None:
    """A response header's value by lower-case `name`, whatever case Slack sent it in."""
    for key, value in (response.headers or {}).items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return None
