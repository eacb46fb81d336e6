"""Signing in to the web console: one-time links, the admin password, sessions, the form
token every change carries, and the headers every page has."""

from __future__ import annotations

from typing import Any

import pytest
from argon2 import PasswordHasher

from bot.console.guard import CONTENT_SECURITY_POLICY, SESSION_COOKIE
from tests.support.clock import FakeClock
from tests.support.console import ConsoleHarness

pytestmark = pytest.mark.usefixtures("on_each_engine")

PASSWORD = "correct horse battery staple"


async def test_a_link_signs_its_person_in_once(console: ConsoleHarness) -> None:
    browser = await console.browser()
    token = await console.link("user:test/UALICE")
    await browser.get(f"/signin/link/{token}")
    await browser.get(f"/signin/link/{token}")  # opening it (a chat's preview) uses nothing
    page = await browser.post("/signin/link", {"token": token})
    assert page.status == 200 and "user:test/UALICE" in page.text and "Overview" in page.text

    other = await console.browser()
    await other.get(f"/signin/link/{token}")
    page = await other.post("/signin/link", {"token": token})
    assert page.status == 410 and "used already" in page.text
    assert (await other.get("/memory")).url.endswith("/signin")  # nobody signed in there


async def test_a_link_expires_after_ten_minutes(console: ConsoleHarness, clock: FakeClock) -> None:
    browser = await console.browser()
    token = await console.link("user:test/UALICE")
    await browser.get(f"/signin/link/{token}")
    clock.advance(minutes=10, seconds=1)
    page = await browser.post("/signin/link", {"token": token})
    assert page.status == 410 and "expired" in page.text


async def test_an_unknown_link_signs_nobody_in(console: ConsoleHarness) -> None:
    browser = await console.browser()
    await browser.get("/signin/link/made-up")
    page = await browser.post("/signin/link", {"token": "made-up"})
    assert page.status == 404
    assert (await browser.get("/")).url.endswith("/signin")


async def test_pages_send_whoever_is_not_signed_in_to_sign_in(console: ConsoleHarness) -> None:
    browser = await console.browser()
    for path in ("/", "/memory", "/cards", "/notes/1", "/changes/1", "/cards/1"):
        page = await browser.get(path)
        assert page.status == 200 and page.url.endswith("/signin"), path
        assert "lorebot console link" in page.text


async def test_a_forged_session_cookie_is_nobody(console: ConsoleHarness) -> None:
    browser = await console.browser()
    browser.session.cookie_jar.update_cookies({SESSION_COOKIE: "forged"})
    assert (await browser.get("/memory")).url.endswith("/signin")


async def test_a_session_ends_with_sign_out_and_its_cookie_is_worth_nothing_after(
    console: ConsoleHarness,
) -> None:
    browser = await console.signed_in("user:test/UALICE")
    [cookie] = [c for c in browser.session.cookie_jar if c.key == SESSION_COOKIE]
    token = cookie.value
    page = await browser.post("/signout", {})
    assert page.url.endswith("/signin")

    replay = await console.browser()
    replay.session.cookie_jar.update_cookies({SESSION_COOKIE: token})
    assert (await replay.get("/memory")).url.endswith("/signin")


async def test_a_session_expires(console: ConsoleHarness, clock: FakeClock) -> None:
    browser = await console.signed_in("user:test/UALICE")
    clock.advance(hours=12, seconds=1)
    assert (await browser.get("/memory")).url.endswith("/signin")


async def test_the_session_cookie_is_http_only_same_site_and_on_the_base_path(
    console: ConsoleHarness,
) -> None:
    browser = await console.browser()
    token = await console.link("user:test/UALICE")
    await browser.get(f"/signin/link/{token}")
    async with browser.session.post(
        console.base + "/signin/link",
        data={"token": token, "csrf": browser.last.csrf if browser.last else ""},
        allow_redirects=False,
    ) as response:
        assert response.status == 303
        cookie = response.cookies[SESSION_COOKIE]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Lax"
    assert cookie["path"] == "/"
    assert not cookie["secure"]  # http here; https in base_url makes it Secure
    assert int(cookie["max-age"]) == 12 * 3600


@pytest.fixture
def console_settings() -> dict[str, Any]:
    return {"password_hash": PasswordHasher().hash(PASSWORD)}


async def test_the_password_signs_in_as_the_first_admin(console: ConsoleHarness) -> None:
    browser = await console.browser()
    page = await browser.get("/signin")
    assert 'type="password"' in page.text
    page = await browser.post("/signin/password", {"password": PASSWORD})
    assert page.status == 200 and "user:test/UADMIN · admin" in page.text


async def test_a_wrong_password_signs_nobody_in(console: ConsoleHarness) -> None:
    browser = await console.browser()
    await browser.get("/signin")
    page = await browser.post("/signin/password", {"password": "not it"})
    assert page.status == 403 and "not the console" in page.text
    assert (await browser.get("/")).url.endswith("/signin")


async def test_sign_in_attempts_are_limited_per_address(console: ConsoleHarness) -> None:
    browser = await console.browser()
    csrf = (await browser.get("/signin")).csrf
    statuses = [
        (await browser.post("/signin/password", {"password": "guess"}, csrf=csrf)).status
        for _ in range(11)
    ]
    assert statuses == [403] * 10 + [429]
    page = await browser.post("/signin/password", {"password": PASSWORD}, csrf=csrf)
    assert page.status == 429  # the right one too, until the window passes


async def test_a_post_without_the_form_token_is_refused_and_changes_nothing(
    console: ConsoleHarness,
) -> None:
    browser = await console.signed_in("user:test/UALICE")
    page = await browser.post("/signout", {}, csrf="")
    assert page.status == 403 and "not sent by your console page" in page.text
    assert (await browser.get("/memory")).status == 200  # still signed in

    other = await console.signed_in("user:test/UBOB")
    page = await browser.post("/signout", {}, csrf=(await other.get("/")).csrf)
    assert page.status == 403


async def test_every_page_has_a_content_security_policy_without_inline_script(
    console: ConsoleHarness,
) -> None:
    browser = await console.signed_in("user:test/UADMIN")
    for path in ("/", "/memory", "/cards", "/signin", "/nowhere"):
        async with browser.session.get(console.base + path) as response:
            assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
            assert response.headers["X-Frame-Options"] == "DENY"
            text = await response.text()
        assert "<script>" not in text and " style=" not in text and " onclick" not in text
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
