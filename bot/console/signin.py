"""Signing in and out: the local admin password (an argon2 hash), and the one-time links
`lorebot console link` prints. A link is opened with GET, which only shows a button, and
used by the POST of that button: a preview of the link in a chat signs nobody in."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from datetime import timedelta

from aiohttp import web
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from adapters.base import Memberships
from bot.console.context import CONSOLE, COOKIES, PAGES, Console
from bot.console.guard import SESSION_COOKIE
from bot.console.rendering import Refused
from memory.errors import StoreError

_log = logging.getLogger(__name__)

PURGE_EVERY_S = 3600.0

WRONG_PASSWORD = "That password is not the console's: nobody was signed in."
LINK_USED = (
    "This sign-in link was used already: each works once. Ask the operator for a new one "
    "(`lorebot console link`)."
)
NOT_HEARD = (
    "lorebot is not set up to take requests from you (bot.allowed_users): nobody was signed in."
)
LINK_EXPIRED = (
    "This sign-in link expired: each works for 10 minutes. Ask the operator for a new one "
    "(`lorebot console link`)."
)


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/signin")(signin_page)
    routes.post("/signin/password")(signin_password)
    routes.get("/signin/link/{token}")(link_page)
    routes.post("/signin/link")(signin_link)
    routes.post("/signout")(signout)


async def signin_page(request: web.Request) -> web.Response:
    console = request.app[CONSOLE]
    settings = console.settings.console
    return request.app[PAGES].render(
        request,
        "signin.html",
        password=settings.password_hash is not None,
        slack=settings.slack_sign_in,
        discord=settings.discord_sign_in,
    )


async def signin_password(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    console.attempts.check(request)
    stored = console.settings.console.password_hash
    if stored is None:
        raise Refused(404, "Not found", "This console has no password: sign in another way.")
    if not console.settings.bot.admins:
        raise Refused(
            409, "No admin", "The password signs in as the first of bot.admins, and none is set."
        )
    password = (await request.post()).get("password", "")
    if not isinstance(password, str) or not await _matches(stored.get_secret_value(), password):
        _log.info("console sign-in with a wrong password from %s", request.remote)
        raise Refused(403, "Wrong password", WRONG_PASSWORD)
    raise await open_session(request, console.settings.bot.admins[0], via="password")


async def _matches(stored: str, password: str) -> bool:
    def verify() -> bool:
        try:
            return PasswordHasher().verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False

    return await asyncio.to_thread(verify)  # argon2 takes tens of milliseconds on purpose


async def link_page(request: web.Request) -> web.Response:
    return request.app[PAGES].render(request, "link.html", token=request.match_info["token"])


async def signin_link(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE]
    console.attempts.check(request)
    token = (await request.post()).get("token", "")
    if not isinstance(token, str) or not token:
        raise Refused(400, "No link", "Open the sign-in link you were given.")
    used = await console.stores.console.use_link(token)
    if used.state == "used":
        raise Refused(410, "Link used", LINK_USED)
    if used.state == "expired":
        raise Refused(410, "Link expired", LINK_EXPIRED)
    if used.state == "unknown":
        raise Refused(404, "Not found", "There is no such sign-in link.")
    raise await open_session(request, used.user_id, via="link")


async def open_session(
    request: web.Request, user_id: str, *, via: str, found: Memberships | None = None
) -> web.HTTPSeeOther:
    """Sign `user_id` in: a new session (never one the browser had) holding where their
    platform says they are (`found`, else asked now); the redirect to the overview that
    sets its cookie, for the caller to raise."""
    console = request.app[CONSOLE]
    if not console.heard(user_id):
        _log.info("console: refused %s, whom bot.allowed_users leaves out", user_id)
        raise Refused(403, "Not signed in", NOT_HEARD)
    hours = console.settings.console.session_hours
    if found is None:
        found = await console.memberships(user_id)
    if found is None:  # the person's own notes and the team's cards still show
        _log.warning("console: %s signed in without their channels: none could be asked", user_id)
        found = Memberships()
    sign_ins = console.stores.console
    if old := request.cookies.get(SESSION_COOKIE):  # the browser's session ends here
        await sign_ins.end_session(old)
    await _purge_now_and_then(console)
    token = secrets.token_urlsafe(32)
    await sign_ins.open_session(
        token,
        user_id,
        via=via,
        csrf=secrets.token_urlsafe(24),
        scopes=console.member_scopes(user_id, found),
        ttl=timedelta(hours=hours),
    )
    _log.info("console: %s signed in by %s", user_id, via)
    response = web.HTTPSeeOther(request.app[PAGES].url("/"))
    request.app[COOKIES].set(response, SESSION_COOKIE, token, max_age=round(hours * 3600))
    return response


_purged_at: list[float] = []


async def _purge_now_and_then(console: Console) -> None:
    """Forget long-expired sign-ins, at most hourly; a failure waits for the next time."""
    now = time.monotonic()
    if _purged_at and now - _purged_at[-1] < PURGE_EVERY_S:
        return
    _purged_at[:] = [now]
    try:
        await console.stores.console.purge()
    except StoreError as exc:
        _log.warning("console: could not forget expired sign-ins: %s", exc)


async def signout(request: web.Request) -> web.StreamResponse:
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        await request.app[CONSOLE].stores.console.end_session(token)
    response = web.HTTPSeeOther(request.app[PAGES].url("/signin"))
    request.app[COOKIES].clear(response, SESSION_COOKIE)
    raise response
