"""A Bot on the Discord adapter against the fake Discord: the adapter pointed at the fake,
the running pieces a test looks at, and the people's scopes and mentions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.discord.adapter import DiscordAdapter
from bot.daemon.app import Bot
from memory import Scope
from tests.fakes.discord import ALICE, TOKEN, FakeDiscord
from tests.fakes.ollama import FakeOllama

ALICE_SCOPE = Scope.parse(f"user:discord/{ALICE.id}")


def mention(user_id: int) -> str:
    return f"<@{user_id}>"


@dataclass
class Running:
    bot: Bot
    adapter: DiscordAdapter
    discord: FakeDiscord
    ollama: FakeOllama

    def chat_turns(self) -> list[dict[str, Any]]:
        """Agent-turn requests the model received (title requests excluded)."""
        return [r for r in self.ollama.chat_requests if "format" not in r]


def adapter_for(fake: FakeDiscord, token: str = TOKEN) -> DiscordAdapter:
    return DiscordAdapter(
        token=token,
        api_base_url=fake.api_base_url,
        gateway_url=fake.gateway_url,
        ready_timeout=5.0,
        guild_ready_timeout=0.05,
    )
