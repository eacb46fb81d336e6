"""Signing in to Slack and the connection events arrive on: auth.test says who the bot is,
then Socket Mode's websocket is opened, or HTTP Events mode's signed endpoint is served.

Each failure to start is an `AdapterConfigError` that names the setting to fix.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.base import AdapterConfigError
from adapters.slack.errors import BOT_TOKEN_HELP, describe_error, missing_scopes, response_header

_log = logging.getLogger(__name__)

APP_TOKEN_HELP = (
    "LOREBOT_SLACK__APP_TOKEN (an app-level token, xapp-…, with connections:write, "
    "under Basic Information → App-Level Tokens)"
)
CONNECT_TIMEOUT_S = 30.0


def check_tokens(bot_token: str, app_token: str | None, *, http_mode: bool) -> None:
    """Refuse a token of the wrong kind, or Socket Mode without an app-level token."""
    if not bot_token.startswith("xoxb-"):
        raise AdapterConfigError(f"the Slack bot token must start with xoxb-: set {BOT_TOKEN_HELP}")
    if http_mode:
        return
    if app_token is None:
        raise AdapterConfigError(
            f"Slack needs {APP_TOKEN_HELP} for Socket Mode, or "
            "LOREBOT_SLACK__SIGNING_SECRET and LOREBOT_SLACK__LISTEN for HTTP Events mode"
        )
    if not app_token.startswith("xapp-"):
        raise AdapterConfigError(f"the Slack app token must start with xapp-: set {APP_TOKEN_HELP}")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the bot is in its workspace, as auth.test says."""

    user_id: str | None
    bot_id: str | None
    team_id: str | None
    workspace_url: str
    name: str


async def identify(client: AsyncWebClient, api_base_url: str, name: str) -> Identity:
    """Ask auth.test who the bot token belongs to (`name` when Slack gives no user name),
    and name the scopes the app lacks."""
    try:
        response = await client.auth_test()
    except SlackApiError as exc:
        error = str(exc.response.get("error"))
        raise AdapterConfigError(
            f"Slack auth.test failed ({error}): {describe_error(error, {})}"
        ) from None
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise AdapterConfigError(
            f"cannot reach the Slack Web API at {api_base_url} "
            f"({exc or type(exc).__name__}): check the "
            "network, or LOREBOT_SLACK__API_BASE_URL"
        ) from None
    identity = Identity(
        user_id=response.get("user_id"),
        bot_id=response.get("bot_id"),
        team_id=response.get("team_id"),
        workspace_url=str(response.get("url") or ""),
        name=str(response.get("user") or name),
    )
    granted = response_header(response, "x-oauth-scopes")
    if granted is None:
        _log.info("Slack did not list the granted scopes; skipping the scope check")
    elif missing := missing_scopes(granted):
        _log.warning(
            "the Slack app lacks the scopes %s: add them under OAuth & Permissions → "
            "Bot Token Scopes, then reinstall the app to the workspace",
            ", ".join(missing),
        )
    _log.info(
        "Slack: signed in as @%s (%s) in workspace %s",
        identity.name,
        identity.user_id,
        identity.team_id,
    )
    return identity


def _split_listen(listen: str) -> tuple[str | None, int]:
    host, _, port = listen.rpartition(":")
    return (host.strip("[]") or None), int(port)


class SlackConnection:
    """The Socket Mode websocket, or the HTTP Events endpoint when `listen` is given."""

    def __init__(self, *, app_token: str | None, listen: str | None, events_path: str) -> None:
        self._app_token = app_token
        self._listen = listen
        self._events_path = events_path
        self.bound_address: tuple[str, int] | None = None
        """Where HTTP Events mode listens, once open (the real port when given 0)."""
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None

    async def open(self, app: AsyncApp, client: AsyncWebClient) -> None:
        """Serve the HTTP endpoint or connect the websocket; what was opened before a
        failure is left for `close`."""
        if self._listen is not None:
            await self._serve_http(app, self._listen)
        else:
            await self._connect_socket(app, client)

    async def _connect_socket(self, app: AsyncApp, client: AsyncWebClient) -> None:
        assert self._app_token is not None
        try:
            opened = await client.apps_connections_open(app_token=self._app_token)
        except SlackApiError as exc:
            error = str(exc.response.get("error"))
            raise AdapterConfigError(
                f"Slack refused to open a Socket Mode connection ({error}): check "
                f"{APP_TOKEN_HELP}, and that Socket Mode is enabled for the app"
            ) from None
        self._socket = AsyncSocketModeHandler(app, self._app_token, web_client=client)
        self._socket.client.wss_uri = str(opened["url"])
        try:
            # slack-sdk retries a failed first connection forever; give up and say so instead.
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                await self._socket.connect_async()  # type: ignore[no-untyped-call]
        except TimeoutError:
            raise AdapterConfigError(
                f"could not open Slack's Socket Mode websocket within {CONNECT_TIMEOUT_S:g} s: "
                "check that outgoing websocket (wss://) connections are allowed"
            ) from None
        _log.info("Slack: connected in Socket Mode")

    async def _serve_http(self, app: AsyncApp, listen: str) -> None:
        host, port = _split_listen(listen)
        self._runner = web.AppRunner(
            app.web_app(path=self._events_path, port=port), handle_signals=False, access_log=None
        )
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, host, port).start()
        except OSError as exc:
            raise AdapterConfigError(
                f"cannot listen on {listen} for Slack events ({exc.strerror}): "
                "check LOREBOT_SLACK__LISTEN"
            ) from None
        address = self._runner.addresses[0]
        self.bound_address = (str(address[0]), int(address[1]))
        _log.info("Slack: HTTP Events mode on %s:%d%s", *self.bound_address, self._events_path)

    @property
    def connected(self) -> bool:
        """Whether the websocket is open (not while slack-sdk reconnects), or the HTTP
        endpoint is serving."""
        if self._runner is not None:
            return True
        if self._socket is None:
            return False
        client = self._socket.client
        session = client.current_session
        return session is not None and not session.closed and not (client.stale or client.closed)

    async def close(self) -> None:
        """Close the websocket or stop serving; safe to call twice."""
        socket, self._socket = self._socket, None
        runner, self._runner = self._runner, None
        if socket is not None:
            await socket.close_async()  # type: ignore[no-untyped-call]
        if runner is not None:
            await runner.cleanup()
