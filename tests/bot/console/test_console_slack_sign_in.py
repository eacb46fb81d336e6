"""Sign in with Slack (OpenID Connect) against the fake Slack: the person comes back as
lorebot knows them, with the workspace and the channels Slack says they are in; a sign-in
that did not start here, from another workspace, or replayed signs nobody in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from memory import NoteDraft, Scope
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.fakes.slack_openid import CLIENT_ID, CLIENT_SECRET
from tests.support.clock import FakeClock
from tests.support.console import Browser, ConsoleHarness
from tests.support.harness import Harness
from tests.support.slack import Running, start_bot


@pytest.fixture
async def running(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> AsyncIterator[Running]:
    sections = {
        "slack": {"api_base_url": fake_slack.api_url},
        "console": {
            "enabled": True,
            "listen": "127.0.0.1:0",
            "slack_client_id": CLIENT_ID,
            "slack_client_secret": CLIENT_SECRET,
        },
    }
    running = await start_bot(tmp_path, fake_ollama, fake_slack, clock, sections)
    try:
        yield running
    finally:
        await running.bot.stop()


@pytest.fixture
async def console(running: Running, clock: FakeClock) -> AsyncIterator[ConsoleHarness]:
    assert running.bot.console is not None
    h = Harness(running.bot, None, running.ollama, clock)  # type: ignore[arg-type]
    harness = ConsoleHarness(h, f"http://127.0.0.1:{running.bot.console.port}")
    try:
        yield harness
    finally:
        await harness.close()


async def save(running: Running, scope: str, topic: str, summary: str) -> None:
    await running.bot.notes.save(NoteDraft(Scope.parse(scope), topic, summary), actor=scope)


async def test_signing_in_with_slack_brings_the_person_and_their_channels(
    running: Running, console: ConsoleHarness
) -> None:
    await save(running, "channel:slack/C1", "deploys", "deploys happen after noon")
    await save(running, "channel:slack/C2", "payroll", "payroll runs on the 25th")
    await save(running, "team:slack/T1", "holidays", "the office closes in august")
    browser = await console.browser()
    page = await browser.get("/signin")
    assert "Sign in with Slack" in page.text
    page = await browser.get("/signin/slack")  # to the fake's authorize page, and back
    assert page.status == 200 and "user:slack/UALICE" in page.text and "Overview" in page.text
    [asked] = running.slack.openid.authorized
    assert asked["scope"] == "openid profile" and asked["nonce"]
    assert asked["redirect_uri"] == console.base + "/signin/slack/callback"

    page = await browser.get("/memory")
    assert "channel:slack/C1" in page.text and "team:slack/T1" in page.text
    assert "channel:slack/C2" not in page.text  # she is not in C2


async def test_a_sign_in_that_did_not_start_here_signs_nobody_in(
    running: Running, console: ConsoleHarness
) -> None:
    browser = await console.browser()
    # The authorize step alone, with a state of the attacker's: no state cookie here.
    page = await browser.get("/signin/slack/callback?code=stolen&state=forged")
    assert page.status == 403 and "did not start from this console" in page.text
    async with browser.session.get(
        console.base + "/signin/slack", allow_redirects=False
    ) as response:
        authorize = response.headers["Location"]
    async with (
        aiohttp.ClientSession() as other,
        other.get(authorize.replace("state=", "state=x"), allow_redirects=False) as response,
    ):
        callback = response.headers["Location"]
    page = await browser.get(callback.replace(console.base, ""))
    assert page.status == 403 and "did not start from this console" in page.text
    assert (await browser.get("/")).url.endswith("/signin")


async def test_a_person_of_another_workspace_is_refused(
    running: Running, console: ConsoleHarness
) -> None:
    running.slack.openid.team = "T9"
    browser = await console.browser()
    page = await browser.get("/signin/slack")
    assert page.status == 403 and "workspace lorebot is not in" in page.text
    assert (await browser.get("/")).url.endswith("/signin")


async def test_a_callback_used_twice_signs_in_once(
    running: Running, console: ConsoleHarness
) -> None:
    browser = await console.browser()
    async with browser.session.get(
        console.base + "/signin/slack", allow_redirects=False
    ) as response:
        authorize = response.headers["Location"]
    async with browser.session.get(authorize, allow_redirects=False) as response:
        callback = response.headers["Location"]
    page = await browser.get(callback.replace(console.base, ""))
    assert page.status == 200 and "user:slack/UALICE" in page.text
    other = await console.browser()
    replay = await other.get(callback.replace(console.base, ""))
    assert replay.status == 403


async def test_without_an_oauth_app_there_is_no_slack_sign_in(console: ConsoleHarness) -> None:
    running_settings = console.h.bot.settings.console
    assert running_settings.slack_sign_in  # this bot has one: another without it
    browser: Browser = await console.browser()
    assert (await browser.get("/signin/discord")).status == 404
