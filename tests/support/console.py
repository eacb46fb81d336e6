"""A browser-like HTTP client for the web console of a running Bot: cookies kept, forms
sent with the token their page carried."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import aiohttp
from yarl import URL

from bot.console.guard import SESSION_COOKIE
from tests.support.harness import Harness

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Page:
    status: int
    text: str
    url: str

    def hidden(self, name: str) -> str | None:
        """The value of the page's first hidden input `name`, as its form would send it."""
        found = re.search(rf'name="{name}" value="([^"]*)"', self.text)
        return found.group(1) if found else None

    @property
    def csrf(self) -> str:
        found = _CSRF.search(self.text)
        assert found, f"no form on {self.url}"
        return found.group(1)


@dataclass
class Browser:
    """One person's browser: its own cookies."""

    base: str
    session: aiohttp.ClientSession
    last: Page | None = field(default=None)

    async def get(self, path: str, **kw: Any) -> Page:
        async with self.session.get(self.base + path, **kw) as response:
            self.last = Page(response.status, await response.text(), str(response.url))
        return self.last

    async def post(self, path: str, data: dict[str, str], *, csrf: str | None = None) -> Page:
        """A form's POST, with the token of the last page unless `csrf` says otherwise
        ("" sends none)."""
        if csrf is None:
            assert self.last is not None
            csrf = self.last.csrf
        form = {**data, **({"csrf": csrf} if csrf else {})}
        shown = self.last.hidden("fingerprint") if self.last else None
        if shown is not None and "fingerprint" not in form:  # as the page's form sends it
            form["fingerprint"] = shown
        async with self.session.post(self.base + path, data=form) as response:
            self.last = Page(response.status, await response.text(), str(response.url))
        return self.last


@dataclass
class ConsoleHarness:
    h: Harness
    base: str
    browsers: list[Browser] = field(default_factory=list)

    async def browser(self) -> Browser:
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        browser = Browser(self.base, session)
        self.browsers.append(browser)
        return browser

    async def link(self, user: str) -> str:
        token = secrets.token_urlsafe(32)
        await self.h.bot.services.stores.console.create_link(token, user)
        return token

    async def with_session(self, user: str, scopes: tuple[str, ...] = ()) -> Browser:
        """A browser holding a session of `user` whose platform said they are in `scopes`
        (the channels and teams a sign-in asks the platform for)."""
        token = secrets.token_urlsafe(32)
        await self.h.bot.services.stores.console.open_session(
            token,
            user,
            via="test",
            csrf=secrets.token_urlsafe(24),
            scopes=scopes,
            ttl=timedelta(hours=1),
        )
        browser = await self.browser()
        browser.session.cookie_jar.update_cookies({SESSION_COOKIE: token}, URL(self.base))
        return browser

    async def signed_in(self, user: str) -> Browser:
        browser = await self.browser()
        token = await self.link(user)
        await browser.get(f"/signin/link/{token}")
        page = await browser.post("/signin/link", {"token": token})
        assert page.status == 200 and "Overview" in page.text, page.text
        return browser

    async def close(self) -> None:
        for browser in self.browsers:
            await browser.session.close()
