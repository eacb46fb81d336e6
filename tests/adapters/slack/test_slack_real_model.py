"""A reply of a real model (SmolLM2-135M under llama.cpp, `model.backend = "openai"`)
streamed into Slack through slack-bolt and slack-sdk against the fake Slack: it grows in
its thread and ends as the words the history keeps."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from adapters.slack.text import to_mrkdwn
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    FakeSlack,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
)
from tests.support.clock import FakeClock
from tests.support.llama import LlamaServer, openai_sections
from tests.support.slack import start_bot

ONE_DAY = timedelta(days=1)


async def test_a_real_models_reply_streams_into_its_thread_and_ends_as_history_keeps_it(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    clock: FakeClock,
    llama_chat: LlamaServer,
) -> None:
    run = await start_bot(
        tmp_path, fake_ollama, fake_slack, clock, sections=openai_sections(llama_chat.base_url)
    )
    run.adapter.stream_interval_s = 0.0
    try:
        body = fake_slack.app_mention("<@UBOT> where is the staging DB?", channel="C7")
        await run.push(body)
        [post] = fake_slack.posts
        assert (post.channel, post.thread_ts) == ("C7", body["event"]["ts"])
        assert len(post.stream) >= 2 and not post.streaming  # appended piece by piece
        stored = await run.bot.log.fetch_messages_between(clock() - ONE_DAY, clock() + ONE_DAY)
        [reply] = [m.content for m in stored if m.role == "assistant"]
        assert reply.strip() and post.current == to_mrkdwn(reply)
        assert fake_ollama.chat_requests == []  # the real model answered, not Ollama's fake
    finally:
        await run.bot.stop()
