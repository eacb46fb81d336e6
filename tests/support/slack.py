"""A Bot on the Slack adapter against the fake Slack: starting one, and the running pieces a
test looks at."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.slack.adapter import SlackAdapter
from bot.daemon.app import Bot
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.support.clock import FakeClock
from tests.support.harness import make_settings

# The signing secret of the HTTP-mode tests.
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@dataclass
class Running:
    """A started Bot with its Slack adapter, and the fakes it talks to."""

    bot: Bot
    adapter: SlackAdapter
    slack: FakeSlack
    ollama: FakeOllama

    async def settle(self) -> None:
        """Wait until every event Slack delivered has been handed over and handled."""
        await self.adapter.wait_delivered()
        await self.bot.dispatcher.wait_idle()

    async def push(self, body: dict[str, Any], **envelope: Any) -> None:
        """Deliver an event over Socket Mode (waiting for its ack), then let the bot finish."""
        await self.slack.push(body, **envelope)
        await self.settle()

    def title(self, topic: str, summary: str) -> None:
        """What the model answers when asked to title a note."""
        self.ollama.reply(json.dumps({"topic": topic, "summary": summary}))


async def start_bot(
    tmp_path: Path,
    ollama: FakeOllama,
    slack: FakeSlack,
    clock: FakeClock,
    sections: dict[str, dict[str, Any]] | None = None,
    **adapter: Any,
) -> Running:
    """A Bot on the fake Slack; `sections` adds settings (the model server, say)."""
    options: dict[str, Any] = {"app_token": slack.app_token, **adapter}
    slack_adapter = SlackAdapter(bot_token=slack.bot_token, api_base_url=slack.api_url, **options)
    settings = make_settings(
        tmp_path / "bot.db", ollama.url, bot={"admins": ["user:slack/UADMIN"]}, **(sections or {})
    )
    bot = Bot(settings, [slack_adapter], clock=clock)
    await bot.start()
    return Running(bot, slack_adapter, slack, ollama)
