"""An action end to end on the real platform libraries: a mention on Slack or Discord, the
model's tool call, a card, the requester's ✅ as a platform reaction, the tool run on a
real MCP server, and the answer that uses its result."""

from __future__ import annotations

from pathlib import Path

from adapters.slack.adapter import SlackAdapter
from bot.daemon.app import Bot
from tests.fakes.discord import ALICE, BOT, MALLORY, FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.mcp_ops import make_server
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.clock import FakeClock
from tests.support.discord import adapter_for, mention
from tests.support.harness import make_settings

OPS = {"servers": [{"name": "ops", "command": "in-process"}]}


async def test_a_slack_mention_runs_a_restart_after_the_requesters_reaction(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    server, ran = make_server()
    adapter = SlackAdapter(
        bot_token=fake_slack.bot_token,
        api_base_url=fake_slack.api_url,
        app_token=fake_slack.app_token,
    )
    settings = make_settings(
        tmp_path / "bot.db", fake_ollama.url, bot={"admins": ["user:slack/UADMIN"]}, mcp=OPS
    )
    bot = Bot(settings, [adapter], clock=clock, mcp_targets={"ops": server})
    await bot.start()
    try:
        assert await bot.mcp.servers["ops"].wait_connected(5)
        fake_ollama.tool_call("ops__restart", {"service": "web"})
        await fake_slack.push(fake_slack.app_mention("<@UBOT> web is down, restart it"))
        await fake_slack.wait_for(lambda: any(len(p.reactions) == 2 for p in fake_slack.posts))
        [card] = [p for p in fake_slack.posts if p.reactions]
        assert "`restart` on the MCP server `ops`" in card.text and '"service": "web"' in card.text
        assert card.reactions == ["white_check_mark", "x"] and ran["restart"] == 0

        await fake_slack.push(fake_slack.reaction(card, "white_check_mark", user="UMALLORY"))
        await adapter.wait_delivered()
        await bot.dispatcher.wait_idle()
        assert ran["restart"] == 0  # another person's ✅ is ignored

        fake_ollama.reply("Restarted web for you.")
        await fake_slack.push(fake_slack.reaction(card, "white_check_mark", user="UALICE"))
        await fake_slack.wait_for(
            lambda: any(p.text == "Restarted web for you." for p in fake_slack.posts)
        )
        assert ran["restart"] == 1
        assert card.current.startswith("✅ Ran `restart` on `ops`")
        result = fake_ollama.chat_requests[-1]["messages"][-1]
        assert result["content"] == "restarted web"
    finally:
        await bot.stop()


async def test_a_discord_mention_runs_a_restart_after_the_requesters_reaction(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    server, ran = make_server()
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url, mcp=OPS)
    bot = Bot(settings, [adapter_for(fake_discord)], clock=clock, mcp_targets={"ops": server})
    await bot.start()
    try:
        assert await bot.mcp.servers["ops"].wait_connected(5)
        fake_ollama.tool_call("ops__restart", {"service": "web"})
        await fake_discord.send_message(f"{mention(BOT.id)} restart web", mentions=[BOT])
        [card] = await fake_discord.wait_for_posts(1)
        await fake_discord.wait_until(lambda: len(card.reactions) == 2)
        assert "`restart` on the MCP server `ops`" in card.content

        await fake_discord.react(card.id, "✅", user=MALLORY)
        await bot.dispatcher.wait_idle()
        assert ran["restart"] == 0

        fake_ollama.reply("Restarted web.")
        await fake_discord.react(card.id, "✅", user=ALICE)
        await fake_discord.wait_until(
            lambda: any(p.content == "Restarted web." for p in fake_discord.posted)
        )
        assert ran["restart"] == 1
        await fake_discord.wait_until(lambda: card.current.startswith("✅ Ran `restart`"))
    finally:
        await bot.stop()
