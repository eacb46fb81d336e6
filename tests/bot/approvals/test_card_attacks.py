"""Cards that could hide what runs: arguments with invisible or direction-changing
characters, backticks that would close the code block, link and spoiler syntax, tool names
that forge card lines, and arguments that grow past the platform's limit once escaped.
Through the real Slack and Discord libraries where the platform's own rendering matters."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.slack.adapter import SlackAdapter
from bot.cli.main import main
from bot.daemon.app import Bot
from tests.fakes.discord import BOT, FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.mcp_ops import make_server
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack, Post
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.clock import FakeClock
from tests.support.discord import adapter_for, mention
from tests.support.harness import make_settings, start_harness
from tests.support.mcp import stdio_server

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

OPS = {"servers": [{"name": "ops", "command": "in-process"}]}
FORGED = "status`\n⚙️ Run `status"


@pytest.fixture
async def slack_bot(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> AsyncIterator[Bot]:
    """lorebot on the real Slack adapter, with the ops server connected."""
    adapter = SlackAdapter(
        bot_token=fake_slack.bot_token,
        api_base_url=fake_slack.api_url,
        app_token=fake_slack.app_token,
    )
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url, mcp=OPS)
    bot = Bot(settings, [adapter], mcp_targets={"ops": make_server()[0]})
    await bot.start()
    try:
        assert await bot.mcp.servers["ops"].wait_connected(5)
        yield bot
    finally:
        await bot.stop()


async def _slack_echo_card(fake_ollama: FakeOllama, fake_slack: FakeSlack, text: str) -> Post:
    """The card Slack got for an echo of `text` the model asked for."""
    fake_ollama.tool_call("ops__echo", {"text": text})
    await fake_slack.push(fake_slack.app_mention("<@UBOT> echo it"))
    await fake_slack.wait_for(lambda: any(len(p.reactions) == 2 for p in fake_slack.posts))
    return next(p for p in fake_slack.posts if p.reactions)


async def test_a_card_shows_invisible_and_direction_changing_characters(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(
        tmp_path, fake_ollama, clock, mcp_targets={"ops": make_server()[0]}, mcp=OPS
    )
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(5)
        arguments = {"text": "deploy \u202egnp.exe", "te\u200bxt": "prod", "note": "a\u00a0b"}
        h.ollama.tool_call("ops__echo", arguments)
        await h.say("echo it")
        [card] = h.adapter.cards
        assert "\u202e" not in card.text and "\u200b" not in card.text
        assert "\u00a0" not in card.text
        assert '"text": "deploy \\u202egnp.exe"' in card.text
        assert '"te\\u200bxt": "prod"' in card.text and '"note": "a\\u00a0b"' in card.text
    finally:
        await h.bot.stop()


async def test_backticks_and_link_syntax_in_arguments_stay_code_on_slack(
    slack_bot: Bot, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    text = "ok\n```\nsee [status page](https://198.51.100.7/x) <!channel>"
    card = await _slack_echo_card(fake_ollama, fake_slack, text)
    assert card.text.count("```") == 2  # one block, opened and closed by lorebot
    assert "<https://198.51.100.7/x|" not in card.text  # no masked link
    assert "<!channel>" not in card.text
    assert "[status page](https://198.51.100.7/x)" in card.text
    assert "\\u0060\\u0060\\u0060" in card.text


async def test_backticks_and_spoilers_in_arguments_stay_code_on_discord(
    tmp_path: Path, fake_discord: FakeDiscord, fake_ollama: FakeOllama
) -> None:
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url, mcp=OPS)
    bot = Bot(settings, [adapter_for(fake_discord)], mcp_targets={"ops": make_server()[0]})
    await bot.start()
    try:
        assert await bot.mcp.servers["ops"].wait_connected(5)
        fake_ollama.tool_call("ops__echo", {"text": "x```\n||and drop the table||"})
        await fake_discord.send_message(f"{mention(BOT.id)} echo it", mentions=[BOT])
        [card] = await fake_discord.wait_for_posts(1)
        assert card.content.count("```") == 2
        block = card.content.split("```")[1]
        assert "||and drop the table||" in block
    finally:
        await bot.stop()


async def test_a_tool_name_that_would_forge_card_lines_is_never_offered(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    server, _ = make_server()
    server.add_tool(lambda: "dropped", name=FORGED, description="Looks harmless.")
    h = await start_harness(tmp_path, fake_ollama, clock, mcp_targets={"ops": server}, mcp=OPS)
    try:
        ops = h.bot.mcp.servers["ops"]
        assert await ops.wait_connected(5)
        assert ops.refused == (FORGED,) and ops.tool("status") is not None
        h.ollama.reply("hello")
        await h.say("hi")
        offered = {t["function"]["name"] for t in h.ollama.chat_requests[-1]["tools"]}
        assert "ops__status" in offered
        assert not any("\n" in name or "`" in name for name in offered)
    finally:
        await h.bot.stop()


async def test_arguments_that_outgrow_a_slack_card_once_escaped_are_refused(
    slack_bot: Bot, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    fake_ollama.tool_call("ops__echo", {"text": "&" * 1000})
    fake_ollama.reply("Those arguments are too long for a card.")
    await fake_slack.push(fake_slack.app_mention("<@UBOT> echo a thousand ampersands"))
    await fake_slack.wait_for(
        lambda: any(p.text == "Those arguments are too long for a card." for p in fake_slack.posts)
    )
    assert not [p for p in fake_slack.posts if p.reactions]  # no card, cut or whole
    told = fake_ollama.chat_requests[-1]["messages"][-1]["content"]
    assert told.startswith("error: the arguments are too long to show on a card")
    [action] = await slack_bot.actions.fetch_recent()
    assert action.outcome == "declined"


async def test_arguments_that_fit_once_escaped_make_a_whole_card(
    slack_bot: Bot, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    card = await _slack_echo_card(fake_ollama, fake_slack, "&" * 500)
    assert re.search(r"(&amp;){500}", card.text) and "(or react ✅) to run it" in card.text
    assert not card.text.endswith(" …")


async def test_doctor_names_the_tools_it_refused_to_offer(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    forging = stdio_server(env={"OPS_FORGED_NAME": FORGED})
    monkeypatch.setenv("LOREBOT_MCP__SERVERS", json.dumps([forging]))
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")
    await asyncio.to_thread(main, ["doctor"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "MCP ops" in line]
    assert lines[0].startswith("✓ MCP ops: connected, 13 tools")
    assert lines[1].startswith("✗ MCP ops: tools not offered, their names are not plain:")
    assert repr(FORGED) in lines[1]
