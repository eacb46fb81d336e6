"""A small model's slips as a person in Slack sees them, through slack-bolt and slack-sdk
against the fake Slack: the streamed message ends as the nudged answer or the fallback,
and it is what the history keeps."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from adapters.slack.text import to_mrkdwn
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    FakeSlack,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
)
from tests.support.clock import FakeClock
from tests.support.slack import start_bot
from tests.support.slips import SLIPS, Slip

ONE_DAY = timedelta(days=1)


@pytest.mark.parametrize("slip", SLIPS)
async def test_a_slip_ends_the_streamed_message_as_the_history_keeps_it(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock, slip: Slip
) -> None:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock)
    run.adapter.stream_interval_s = 0.0
    try:
        slip.script(fake_ollama)
        await run.push(fake_slack.app_mention("<@UBOT> which VPN gateway?", channel="C7"))
        [post] = fake_slack.posts
        stored = await run.bot.log.fetch_messages_between(clock() - ONE_DAY, clock() + ONE_DAY)
        [reply] = [m.content for m in stored if m.role == "assistant"]
        assert slip.ends_as(reply), reply
        assert post.current == to_mrkdwn(reply) and not post.streaming
        assert fake_ollama.pending == 0
    finally:
        await run.bot.stop()
