"""What every request of the console passes: security headers, the person signed in (their
session, kept in the database, so any replica knows it), the form token every change
carries, and the page that says why a request was refused."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.console.browser import Cookies, same_text
from bot.console.context import PAGES
from bot.console.people import VISITOR, Person, Visitor
from bot.console.rendering import Pages, Refused, not_found
from memory.stores.console import ConsoleSignIns

_log = logging.getLogger(__name__)

SESSION_COOKIE = "lorebot_session"
# Before signing in, the sign-in forms carry the token this cookie holds (double submit).
FORM_COOKIE = "lorebot_form"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# No inline script or style anywhere: HTMX is the one script, served by the console.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
FORGED = (
    "This form was not sent by your console page, or it is out of date: nothing was "
    "changed. Reload the page and try again."
)

BROKE = "Nothing more was changed. lorebot's log says what went wrong."

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Guard:
    """The console's middlewares, outermost first."""

    def __init__(
        self, pages: Pages, sign_ins: ConsoleSignIns, admins: frozenset[str], cookies: Cookies
    ) -> None:
        self.pages = pages
        self.sign_ins = sign_ins
        self.admins = admins
        self.cookies = cookies

    @property
    def middlewares(self) -> list[Callable[..., Awaitable[web.StreamResponse]]]:
        return [self.headers, self.refusals, self.session, self.forms]

    @web.middleware
    async def headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # a redirect
            exc.headers.update(HEADERS)
            raise
        response.headers.update(HEADERS)
        # How long the page took here, as browsers' developer tools and benchmarks read it.
        spent = (time.perf_counter() - started) * 1000
        response.headers["Server-Timing"] = f"app;dur={spent:.1f}"
        if response.status == 200 and request.path.startswith(self.pages.url("/static/")):
            response.headers["Cache-Control"] = "public, max-age=86400"
        return response

    @web.middleware
    async def refusals(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except Refused as refused:
            return self._refusal_page(request, refused)
        except web.HTTPNotFound:
            return self._refusal_page(request, not_found())
        except web.HTTPMethodNotAllowed:
            return self._refusal_page(
                request, Refused(405, "Not allowed", "This address does not take that request.")
            )
        except web.HTTPException:
            raise  # a redirect
        except Exception:
            _log.exception("console: %s %s failed", request.method, _route(request))
            return self._refusal_page(request, Refused(500, "Something went wrong", BROKE))

    def _refusal_page(self, request: web.Request, refused: Refused) -> web.Response:
        return self.pages.render(
            request,
            "refused.html",
            status=refused.status,
            title=refused.title,
            detail=refused.detail,
        )

    @web.middleware
    async def session(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Who is signed in (None: nobody), and the form token their pages carry."""
        person, fresh_form = None, ""
        token = request.cookies.get(SESSION_COOKIE)
        if request.path.startswith(self.pages.url("/static/")):
            token = None  # a stylesheet or script is the same for all: no session to read
        if token:
            found = await self.sign_ins.fetch_session(token)
            if found is not None:
                person = Person(
                    found.user_id,
                    admin=found.user_id in self.admins,
                    scopes=found.scopes,
                    csrf=found.csrf,
                    via=found.via,
                )
        if person is not None:
            csrf = person.csrf
        elif FORM_COOKIE in request.cookies:
            csrf = request.cookies[FORM_COOKIE]
        else:
            csrf = fresh_form = secrets.token_urlsafe(24)
        request[VISITOR] = Visitor(person, csrf)
        response = await handler(request)
        if fresh_form:
            self.cookies.set(response, FORM_COOKIE, fresh_form, max_age=3600)
        return response

    @web.middleware
    async def forms(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Every change carries the form token of the page it came from: refused (403)
        without it, before anything is read of it or changed."""
        if request.method not in SAFE_METHODS:
            try:
                form = await request.post()
            except (ValueError, LookupError, web.HTTPException):
                raise Refused(400, "Unreadable form", "This form could not be read.") from None
            given = form.get("csrf") or request.headers.get("X-CSRF-Token") or ""
            expected = request[VISITOR].csrf
            if not (isinstance(given, str) and expected and same_text(given, expected)):
                _log.info(
                    "refused a %s to %s without its form token", request.method, _route(request)
                )
                raise Refused(403, "Forbidden", FORGED)
        return await handler(request)


def signed_in(request: web.Request) -> Person:
    """The person signed in; anyone else is sent to the sign-in page (GET) or refused."""
    person = request[VISITOR].person
    if person is not None:
        return person
    if request.method in SAFE_METHODS:
        raise web.HTTPSeeOther(request.app[PAGES].url("/signin"))
    raise Refused(403, "Forbidden", "Sign in first: nothing was changed.")


def _route(request: web.Request) -> str:
    """The request's route as written (`/signin/link/{token}`), not its path: a path can
    hold a sign-in link's token, which is never logged."""
    info = request.match_info.route.resource
    return info.canonical if info is not None else "an unknown address"
