"""Sign in with Discord (OAuth2, `identify`) against the fake Discord: the person comes back
as lorebot knows them, with the server they share with the bot and the channels they may
view there; someone who shares no server with lorebot signs nobody in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.daemon.app import Bot
from memory import NoteDraft, Scope
from tests.fakes.discord import ALICE, CHANNEL_ID, GUILD_ID, MALLORY, FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.discord_oauth import CLIENT_ID, CLIENT_SECRET
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.console import ConsoleHarness
from tests.support.discord import adapter_for
from tests.support.harness import Harness, make_settings


@pytest.fixture
async def console(
    tmp_path: Path, fake_ollama: FakeOllama, fake_discord: FakeDiscord, clock: FakeClock
) -> AsyncIterator[ConsoleHarness]:
    settings = make_settings(
        tmp_path / "bot.db",
        fake_ollama.url,
        discord={"api_base_url": fake_discord.api_base_url},
        console={
            "enabled": True,
            "listen": "127.0.0.1:0",
            "discord_client_id": CLIENT_ID,
            "discord_client_secret": CLIENT_SECRET,
        },
    )
    adapter = adapter_for(fake_discord)
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    assert bot.console is not None
    harness = ConsoleHarness(
        Harness(bot, None, fake_ollama, clock),  # type: ignore[arg-type]
        f"http://127.0.0.1:{bot.console.port}",
    )
    try:
        yield harness
    finally:
        await harness.close()
        await bot.stop()


async def test_signing_in_with_discord_brings_the_person_and_their_channels(
    console: ConsoleHarness, fake_discord: FakeDiscord
) -> None:
    notes = console.h.bot.notes
    await notes.save(
        NoteDraft(Scope.parse(f"channel:discord/{CHANNEL_ID}"), "rules", "be kind"), actor="x"
    )
    await notes.save(
        NoteDraft(Scope.parse(f"team:discord/{GUILD_ID}"), "events", "game night on friday"),
        actor="x",
    )
    browser = await console.browser()
    assert "Sign in with Discord" in (await browser.get("/signin")).text
    page = await browser.get("/signin/discord")
    assert page.status == 200 and f"user:discord/{ALICE.id}" in page.text
    [asked] = fake_discord.oauth.authorized
    assert asked["scope"] == "identify"
    page = await browser.get("/memory")
    assert f"channel:discord/{CHANNEL_ID}" in page.text and f"team:discord/{GUILD_ID}" in page.text


async def test_someone_sharing_no_server_with_lorebot_is_refused(
    console: ConsoleHarness, fake_discord: FakeDiscord
) -> None:
    fake_discord.oauth.user = MALLORY.payload()  # not a member of the fake's guild
    browser = await console.browser()
    page = await browser.get("/signin/discord")
    assert page.status == 403 and "server lorebot is not in" in page.text
    assert (await browser.get("/")).url.endswith("/signin")
