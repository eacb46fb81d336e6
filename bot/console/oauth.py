"""Sign in with Slack (OpenID Connect) and with Discord (OAuth2, scope `identify`): the
browser goes to the platform with a `state` the console keeps in a short-lived cookie, and
comes back with a code, which the console exchanges for who the person is. Their platform
must be one lorebot is in (Slack's workspace, a Discord server shared with the bot), and
where they are is asked of it, as for a link. Each endpoint follows the platform's API base
setting, so the tests point them at the fakes."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
from aiohttp import web

from bot.config.settings import Settings
from bot.console.browser import same_text
from bot.console.context import CONSOLE, COOKIES
from bot.console.rendering import Refused, not_found
from bot.console.signin import open_session
from memory.scope_ids import scope_id
from memory.types import Scope

_log = logging.getLogger(__name__)

STATE_COOKIE = "lorebot_oauth"
STATE_TTL_S = 600
TIMEOUT = aiohttp.ClientTimeout(total=15)
NOT_STARTED_HERE = (
    "This sign-in did not start from this console, or it took longer than 10 minutes: "
    "nobody was signed in. Start again."
)


@dataclass(frozen=True, slots=True)
class Provider:
    """One platform's sign-in: where to send the browser, and where to ask who came back."""

    platform: str
    authorize_url: str
    token_url: str
    who_url: str
    client_id: str
    client_secret: str
    scope: str


def providers(settings: Settings) -> dict[str, Provider]:
    """The platforms people may sign in with: those whose OAuth app is configured."""
    console, found = settings.console, {}
    if console.slack_sign_in and console.slack_client_secret and console.slack_client_id:
        api = settings.slack.api_base_url.rstrip("/") + "/"
        site = api.removesuffix("api/")
        found["slack"] = Provider(
            "slack",
            site + "openid/connect/authorize",
            api + "openid.connect.token",
            api + "openid.connect.userInfo",
            console.slack_client_id,
            console.slack_client_secret.get_secret_value(),
            "openid profile",
        )
    if console.discord_sign_in and console.discord_client_secret and console.discord_client_id:
        api = settings.discord.api_base_url.rstrip("/")
        parts = urlsplit(api)
        found["discord"] = Provider(
            "discord",
            f"{parts.scheme}://{parts.netloc}/oauth2/authorize",
            api + "/oauth2/token",
            api + "/users/@me",
            console.discord_client_id,
            console.discord_client_secret.get_secret_value(),
            "identify",
        )
    return found


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/signin/{platform:slack|discord}")(start)
    routes.get("/signin/{platform:slack|discord}/callback")(finish)


def _provider(request: web.Request) -> Provider:
    found = providers(request.app[CONSOLE].settings).get(request.match_info["platform"])
    if found is None:
        raise not_found()
    return found


def _callback(request: web.Request, provider: Provider) -> str:
    """Where the platform sends the browser back: under `console.base_url` when it is set
    (behind a proxy), else where this request came to."""
    public = request.app[CONSOLE].settings.console.base_url or f"{request.scheme}://{request.host}"
    return f"{public}/signin/{provider.platform}/callback"


async def start(request: web.Request) -> web.StreamResponse:
    provider = _provider(request)
    state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(16)
    query = {
        "response_type": "code",
        "client_id": provider.client_id,
        "scope": provider.scope,
        "redirect_uri": _callback(request, provider),
        "state": state,
    }
    if provider.platform == "slack":
        query["nonce"] = nonce
    response = web.HTTPSeeOther(f"{provider.authorize_url}?{urlencode(query)}")
    value = f"{provider.platform}.{state}.{nonce}"
    request.app[COOKIES].set(response, STATE_COOKIE, value, max_age=STATE_TTL_S)
    raise response


async def finish(request: web.Request) -> web.StreamResponse:
    provider = _provider(request)
    console = request.app[CONSOLE]
    console.attempts.check(request)
    platform, _, rest = request.cookies.get(STATE_COOKIE, "").partition(".")
    state, _, nonce = rest.partition(".")
    given = request.query.get("state", "")
    if platform != provider.platform or not state or not same_text(given, state):
        _log.info("console: a %s sign-in came back with a state it did not send", platform)
        raise Refused(403, "Not signed in", NOT_STARTED_HERE)
    if "error" in request.query or not request.query.get("code"):
        why = request.query.get("error", "no code")[:100]
        raise Refused(403, "Not signed in", f"{provider.platform} did not sign you in: {why}.")
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as http:
            if provider.platform == "slack":
                user, team = await _slack_person(http, provider, request, nonce)
            else:
                user, team = await _discord_person(http, provider, request), None
        person = f"user:{provider.platform}/{scope_id(user)}"
        Scope.parse(person)  # an id no scope can hold is no person lorebot knows
    except (aiohttp.ClientError, TimeoutError, ValueError, KeyError) as exc:
        _log.warning("console: %s sign-in failed: %s", provider.platform, type(exc).__name__)
        raise Refused(
            502, "Not signed in", f"{provider.platform} did not answer as expected: try again."
        ) from None
    found = await console.memberships(person)
    if found is None:
        raise Refused(
            503,
            "Not signed in yet",
            f"lorebot cannot ask {provider.platform} where you are right now: try again in "
            "a minute.",
        )
    if (team is not None and team not in found.teams) or not found.teams:
        _log.info("console: refused a %s sign-in from outside lorebot's teams", provider.platform)
        where = "workspace" if provider.platform == "slack" else "server"
        raise Refused(
            403, "Not signed in", f"You signed in to a {where} lorebot is not in: nobody was."
        )
    response = await open_session(request, person, via=provider.platform, found=found)
    request.app[COOKIES].clear(response, STATE_COOKIE)
    raise response


async def _slack_person(
    http: aiohttp.ClientSession, provider: Provider, request: web.Request, nonce: str
) -> tuple[str, str]:
    """Slack's user and workspace ids for the code, checking the ID token was made for this
    console and this sign-in (`aud`, `nonce`)."""
    form = {
        "client_id": provider.client_id,
        "client_secret": provider.client_secret,
        "code": request.query["code"],
        "redirect_uri": _callback(request, provider),
    }
    async with http.post(provider.token_url, data=form) as response:
        tokens = await response.json(content_type=None)
    if not tokens.get("ok"):
        raise Refused(403, "Not signed in", f"Slack refused the sign-in: {tokens.get('error')}.")
    claims = _claims(str(tokens["id_token"]))
    if claims.get("aud") != provider.client_id or not same_text(
        str(claims.get("nonce", "")), nonce
    ):
        raise Refused(403, "Not signed in", NOT_STARTED_HERE)
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    async with http.post(provider.who_url, headers=bearer) as response:
        info = await response.json(content_type=None)
    if not info.get("ok"):
        raise Refused(403, "Not signed in", f"Slack refused the sign-in: {info.get('error')}.")
    return str(info["https://slack.com/user_id"]), str(info["https://slack.com/team_id"])


def _claims(id_token: str) -> dict[str, Any]:
    """The claims of an ID token. Its signature is not checked: it came straight from
    Slack's token endpoint over TLS, which OpenID Connect allows (Core 3.1.3.7)."""
    try:
        payload = id_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, binascii.Error, UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError("not an ID token") from None
    if not isinstance(claims, dict):
        raise ValueError("not an ID token")
    return claims


async def _discord_person(
    http: aiohttp.ClientSession, provider: Provider, request: web.Request
) -> str:
    form = {
        "grant_type": "authorization_code",
        "code": request.query["code"],
        "redirect_uri": _callback(request, provider),
        "client_id": provider.client_id,
        "client_secret": provider.client_secret,
    }
    async with http.post(provider.token_url, data=form) as response:
        if response.status != 200:
            raise Refused(403, "Not signed in", "Discord refused the sign-in.")
        tokens = await response.json(content_type=None)
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    async with http.get(provider.who_url, headers=bearer) as response:
        if response.status != 200:
            raise Refused(403, "Not signed in", "Discord refused the sign-in.")
        user = await response.json(content_type=None)
    return str(user["id"])
