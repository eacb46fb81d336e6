"""Two replicas on one PostgreSQL database, in this process: two Bots over recording
adapters that share what was posted, as one platform would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.daemon.app import Bot
from tests.fakes.adapter import ButtonsAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.harness import make_settings


@asynccontextmanager
async def two_replicas(
    tmp_path: Path, fake_ollama: FakeOllama, pg_url: str, **sections: dict[str, Any]
) -> AsyncIterator[tuple[Bot, Bot]]:
    """Two started Bots on the database at `pg_url`, stopped after; `sections` adds
    settings to both."""
    bots = []
    for name in ("a", "b"):
        settings = make_settings(
            tmp_path / name / "bot.db", fake_ollama.url, database={"url": pg_url}, **sections
        )
        bots.append(Bot(settings, [ButtonsAdapter()]))
    first, second = (bot.adapters["test"] for bot in bots)
    assert isinstance(first, ButtonsAdapter) and isinstance(second, ButtonsAdapter)
    second.sent = first.sent  # one platform: either replica edits what the other posted
    for bot in bots:
        await bot.start()
    try:
        yield bots[0], bots[1]
    finally:
        for bot in bots:
            await bot.stop()
