"""A reply of a real model (SmolLM2-135M under llama.cpp, `model.backend = "openai"`)
streamed into Discord through discord.py against the fake Discord: posted once, edited as
it grows, and ending as the words the history keeps."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

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
from tests.support.llama import LlamaServer, openai_sections

ONE_DAY = timedelta(days=1)
# Only stops a hang: on a busy 2-core machine this model writes about 4 tokens a second.
REAL_MODEL_GUARD_S = 600.0


async def test_a_real_models_reply_is_posted_edited_and_ends_as_history_keeps_it(
    tmp_path: Path,
    fake_discord: FakeDiscord,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    llama_chat: LlamaServer,
) -> None:
    adapter = adapter_for(fake_discord)
    settings = make_settings(
        tmp_path / "bot.db", fake_ollama.url, **openai_sections(llama_chat.base_url)
    )
    bot = Bot(settings, [adapter], clock=clock)
    await bot.start()
    try:
        await fake_discord.send_message(f"{mention(BOT.id)} which VPN gateway?", mentions=[BOT])
        [post] = await fake_discord.wait_for_posts(1, within=REAL_MODEL_GUARD_S)
        await bot.dispatcher.wait_idle()
        stored = await bot.log.fetch_messages_between(clock() - ONE_DAY, clock() + ONE_DAY)
        [reply] = [m.content for m in stored if m.role == "assistant"]
        assert reply.strip() and post.current == reply
        assert fake_ollama.chat_requests == []  # the real model answered
    finally:
        await bot.stop()
