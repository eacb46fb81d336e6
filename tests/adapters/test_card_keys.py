"""Finding a card from a reaction on the real platforms: by channel and message (a Slack ts
is unique only within its channel), and a Discord reaction given again after a removal."""

from __future__ import annotations

import json
from pathlib import Path

from bot.daemon.app import Bot
from tests.fakes.discord import ALICE, FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.clock import FakeClock
from tests.support.discord import ALICE_SCOPE, adapter_for
from tests.support.harness import make_settings
from tests.support.slack import start_bot


async def test_slack_cards_with_the_same_ts_in_two_channels_are_told_apart(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    fake_slack.ts_per_channel = True
    running = await start_bot(tmp_path, fake_ollama, fake_slack, clock)
    try:
        running.title("deploys", "deploys on tuesday")
        await running.push(fake_slack.app_mention("<@UBOT> remember deploys on tuesday"))
        running.title("deploys", "deploys on friday")
        await running.push(
            fake_slack.app_mention("<@UBOT> remember deploys on friday", channel="C2")
        )
        first, second = fake_slack.posts
        assert first.ts == second.ts and first.channel != second.channel

        await running.push(fake_slack.reaction(second, "white_check_mark", user="UALICE"))
        [note] = await running.bot.notes.list_notes()
        assert str(note.scope) == "channel:slack/C2" and note.summary == "deploys on friday"
        assert second.current.startswith("✅ Saved") and first.edits == []
    finally:
        await running.bot.stop()


async def test_a_discord_reaction_removed_and_added_again_decides(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url, bot={"queue_size": 1})
    bot = Bot(settings, [adapter_for(fake_discord)], clock=clock)
    await bot.start()
    try:
        fake_ollama.reply(json.dumps({"topic": "staging-db", "summary": "staging is pg-2"}))
        await fake_discord.send_message("remember that the staging DB is pg-2", dm=True)
        card = (await fake_discord.wait_for_posts(1))[0]
        await fake_discord.wait_until(lambda: len(card.reactions) == 2)
        await bot.dispatcher.wait_idle()

        # Alice's ✅ arrives while the bot is busy with a slow question and is turned away.
        fake_ollama.delay(0.5)
        fake_ollama.reply("a slow answer")
        await fake_discord.send_message("what is slow?", dm=True, author=ALICE)
        await fake_discord.wait_until(lambda: bot.dispatcher.pending == 1)
        await fake_discord.react(card.id, "✅", user=ALICE)
        await fake_discord.wait_until(lambda: any("busy" in p.content for p in fake_discord.posted))
        await bot.dispatcher.wait_idle()
        assert await bot.notes.list_notes() == []

        # She takes the reaction back and gives it again: now it decides.
        await fake_discord.unreact(card.id, "✅", user=ALICE)
        await fake_discord.react(card.id, "✅", user=ALICE)
        await fake_discord.wait_until(lambda: card.edits)
        await bot.dispatcher.wait_idle()
        [note] = await bot.notes.list_notes()
        assert note.scope == ALICE_SCOPE and card.current.startswith("✅ Saved")
    finally:
        await bot.stop()
