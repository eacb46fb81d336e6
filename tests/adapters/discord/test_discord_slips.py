"""A small model's slips as a person in Discord sees them, through discord.py against the
fake Discord: the posted message ends as the nudged answer or the fallback, and it is what
the history keeps."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.daemon.app import Bot
from tests.fakes.discord import (
    BOT,
    FakeDiscord,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.discord import adapter_for, mention
from tests.support.harness import make_settings
from tests.support.slips import SLIPS, Slip

ONE_DAY = timedelta(days=1)


@pytest.mark.parametrize("slip", SLIPS)
async def test_a_slip_ends_the_posted_message_as_the_history_keeps_it(
    tmp_path: Path,
    fake_discord: FakeDiscord,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    slip: Slip,
) -> None:
    bot = Bot(
        make_settings(tmp_path / "bot.db", fake_ollama.url),
        [adapter_for(fake_discord)],
        clock=clock,
    )
    await bot.start()
    try:
        slip.script(fake_ollama)
        await fake_discord.send_message(f"{mention(BOT.id)} which VPN gateway?", mentions=[BOT])
        [post] = await fake_discord.wait_for_posts(1)
        await bot.dispatcher.wait_idle()
        stored = await bot.log.fetch_messages_between(clock() - ONE_DAY, clock() + ONE_DAY)
        [reply] = [m.content for m in stored if m.role == "assistant"]
        assert slip.ends_as(reply), reply
        assert post.current == reply
        assert fake_ollama.pending == 0
    finally:
        await bot.stop()
