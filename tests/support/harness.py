"""A running Bot over a recording adapter and the fake Ollama, for end-to-end core tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.base import Event
from bot.config.settings import Settings
from bot.daemon.app import Bot
from tests.fakes.adapter import RecordingAdapter, Sent
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock

# The PostgreSQL database the bots of a test use instead of SQLite (`on_each_engine`).
_postgresql_url: list[str] = []


@pytest.fixture
def on_each_engine(
    engine: str, database_at: str | Path, request: pytest.FixtureRequest
) -> Iterator[str]:
    """Run the test once on SQLite and once on PostgreSQL: every bot it starts with
    `make_settings` keeps its memory in the test's database on that engine, and so does
    the command line of a test that asks for `env`."""
    if engine == "postgresql":
        _postgresql_url.append(str(database_at))
        if "env" in request.fixturenames:
            request.getfixturevalue("env")  # first: it clears every LOREBOT_ variable
            request.getfixturevalue("monkeypatch").setenv("LOREBOT_DATABASE__URL", str(database_at))
    try:
        yield engine
    finally:
        _postgresql_url.clear()


def make_settings(path: Path, ollama_url: str, **sections: dict[str, Any]) -> Settings:
    database = {"path": path, **sections.pop("database", {})}
    if _postgresql_url:
        database.setdefault("url", _postgresql_url[-1])
    values: dict[str, Any] = {
        "database": database,
        "ollama": {"host": ollama_url, "timeout_s": 2.0, **sections.pop("ollama", {})},
        "bot": {"admins": ["user:test/UADMIN"], **sections.pop("bot", {})},
        "jobs": {"enabled": False, **sections.pop("jobs", {})},
        "skills": {
            "home_root": path.parent / "home-skills",
            "user_root": path.parent / "user-skills",
            **sections.pop("skills", {}),
        },
        **sections,
    }
    return Settings(**values)


@dataclass
class Harness:
    bot: Bot
    adapter: RecordingAdapter
    ollama: FakeOllama
    clock: FakeClock

    async def send(self, event: Event) -> None:
        """Deliver one event as the platform would, and wait until the bot is done."""
        await self.bot.dispatcher.submit(event)
        await self.bot.dispatcher.wait_idle()

    async def say(self, text: str, **kw: Any) -> None:
        await self.send(self.adapter.message(text, **kw))

    async def react(self, card: Sent, emoji: str, user: str = "UALICE") -> None:
        await self.send(self.adapter.reaction(card, emoji, user=user))

    def last_prompt(self) -> list[dict[str, Any]]:
        """The messages of the last agent-turn request the model received."""
        turns = [r for r in self.ollama.chat_requests if "format" not in r]
        messages: list[dict[str, Any]] = turns[-1]["messages"]
        return messages

    def script_title(self, topic: str, summary: str) -> None:
        """What the model answers to the structured-output request for a note's title."""
        self.ollama.reply(json.dumps({"topic": topic, "summary": summary}))


async def start_harness(
    tmp_path: Path,
    fake: FakeOllama,
    clock: FakeClock,
    adapter: RecordingAdapter | None = None,
    mcp_targets: dict[str, Any] | None = None,
    **sections: dict[str, Any],
) -> Harness:
    adapter = adapter or RecordingAdapter()
    settings = make_settings(tmp_path / "bot.db", fake.url, **sections)
    bot = Bot(settings, [adapter], clock=clock, mcp_targets=mcp_targets)
    await bot.start()
    return Harness(bot, adapter, fake, clock)


@pytest.fixture
async def harness(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Harness]:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        yield h
    finally:
        await h.bot.stop()
