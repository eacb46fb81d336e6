"""The console behind a reverse proxy: under `console.base_url`'s path, every page and link
is there, nothing at the root, and its cookies are Secure on that path."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from bot.console.guard import SESSION_COOKIE
from tests.support.console import ConsoleHarness

pytestmark = pytest.mark.usefixtures("on_each_engine")


@pytest.fixture
def console_settings() -> dict[str, Any]:
    return {"base_url": "https://lorebot.example.com/console/"}


async def test_pages_links_and_cookies_live_under_the_base_path(console: ConsoleHarness) -> None:
    token = await console.link("user:test/UALICE")
    async with aiohttp.ClientSession() as http:
        async with http.get(console.base + "/console/signin") as response:
            page = await response.text()
            form = response.cookies["lorebot_form"]
        assert response.status == 200
        assert 'href="/console/static/console.css"' in page
        assert 'src="/console/static/htmx-2.0.11.min.js"' in page
        assert form["secure"] and form["path"] == "/console"
        async with http.get(console.base + "/signin") as response:
            assert response.status == 404
        async with http.get(console.base + "/console/static/console.css") as response:
            assert response.status == 200
        async with http.post(
            console.base + "/console/signin/link",
            data={"token": token, "csrf": form.value},
            cookies={"lorebot_form": form.value},
            allow_redirects=False,
        ) as response:
            assert response.status == 303
            assert response.headers["Location"] == "/console/"
            cookie = response.cookies[SESSION_COOKIE]
    assert cookie["secure"] and cookie["httponly"] and cookie["path"] == "/console"
