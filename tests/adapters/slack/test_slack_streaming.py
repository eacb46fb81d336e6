"""Replies that grow in Slack while the model writes them, and the status line beside them,
through the real Bot, slack-bolt and slack-sdk against the fake Slack and fake Ollama.

The adapter's stream interval is set to 0 so every piece the fake model sends reaches Slack:
the pacing is the core's, and no test waits for a clock.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.base import SEARCHING, THINKING, ConversationRef, UserRef
from adapters.slack.adapter import SlackAdapter
from adapters.slack.text import SLACK_TEXT_LIMIT, to_mrkdwn
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    FakeSlack,
    Post,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
)
from tests.support.clock import FakeClock
from tests.support.slack import Running, start_bot

START, APPEND, STOP = "chat.startStream", "chat.appendStream", "chat.stopStream"
STREAM_METHODS = (START, APPEND, STOP, "chat.postMessage", "chat.update")
SET_STATUS = "assistant.threads.setStatus"


@pytest.fixture
async def running(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> AsyncIterator[Running]:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock)
    run.adapter.stream_interval_s = 0.0
    try:
        yield run
    finally:
        await run.bot.stop()


def methods(slack: FakeSlack) -> list[str]:
    return [call.method for call in slack.calls if call.method in STREAM_METHODS]


def stream_log(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "adapters.slack.stream"]


# --- a reply as it is written ---------------------------------------------------------------


async def test_a_reply_grows_in_its_thread_and_ends_as_the_models_words(running: Running) -> None:
    slack = running.slack
    running.ollama.reply("The staging DB is pg-stage-2, says the wiki.")
    body = slack.app_mention("<@UBOT> where is the staging DB?", channel="C7")
    await running.push(body)

    [post] = slack.posts
    assert (post.channel, post.thread_ts) == ("C7", body["event"]["ts"])
    assert len(post.stream) > 2 and not post.streaming
    assert "".join(post.stream) == "The staging DB is pg-stage-2, says the wiki."
    assert post.current == "The staging DB is pg-stage-2, says the wiki."
    calls = methods(slack)
    assert calls[0] == START and calls[-1] == STOP and set(calls[1:-1]) == {APPEND}
    [start] = slack.calls_to(START)
    assert start["thread_ts"] == body["event"]["ts"]
    assert (start["recipient_user_id"], start["recipient_team_id"]) == ("UALICE", "T1")
    # Replies in that thread reach the bot without a mention, as after a posted reply.
    running.ollama.reply("Prod is pg-prod-1.")
    await running.push(slack.message("and prod?", channel="C7", thread_ts=body["event"]["ts"]))
    assert slack.posts[-1].current == "Prod is pg-prod-1."


async def test_a_streamed_reply_ends_as_the_message_a_post_would_be(running: Running) -> None:
    slack = running.slack
    answer = (
        "Deploying now <!channel> @here: see **the notes** & "
        "[runbook](https://wiki.example/run)\n- step one\n- step two"
    )
    running.ollama.reply(answer)
    await running.push(slack.app_mention("<@UBOT> announce the deploy"))
    running.ollama.reply(answer)
    await running.push(slack.message("announce the deploy", channel="D1"))  # posted whole

    streamed, posted = slack.posts
    assert streamed.stream and not posted.stream
    assert streamed.current == posted.text == to_mrkdwn(answer)
    for piece in streamed.stream:  # nothing streamed could ping or mention
        assert "<!" not in piece and "@here" not in piece
    [update] = slack.calls_to("chat.update")
    assert update["ts"] == streamed.ts and update["blocks"] == []


async def test_words_the_model_gave_up_for_a_search_are_replaced_by_its_answer(
    running: Running,
) -> None:
    slack = running.slack
    running.ollama.tool_call("memory_search", {"query": "vpn"}, content="Let me look that up.")
    running.ollama.reply("The VPN gateway is vpn-2.")
    body = slack.app_mention("<@UBOT> which VPN gateway?")
    await running.push(body)

    [post] = slack.posts
    assert "".join(post.stream) == "Let me look that up."
    assert post.current == "The VPN gateway is vpn-2."
    # The answer replaced those words as soon as it began, then grew by edits: a stream
    # cannot take words back.
    calls = methods(slack)
    assert calls[calls.index(STOP) - 1] in (START, APPEND) and calls.count(STOP) == 1
    edits = [update["text"] for update in slack.calls_to("chat.update")]
    assert len(edits) > 2 and edits[0] == "The" and edits[-1] == "The VPN gateway is vpn-2."
    pairs = zip(edits, edits[1:], strict=False)
    assert all(later.startswith(earlier) for earlier, later in pairs)
    statuses = [(s["status"], s["thread_ts"]) for s in slack.calls_to(SET_STATUS)]
    assert statuses == [(THINKING, body["event"]["ts"]), (SEARCHING, body["event"]["ts"])]


async def test_the_status_line_follows_the_turn_in_order(running: Running) -> None:
    slack = running.slack
    running.ollama.tool_call("memory_search", {"query": "wiki"})
    running.ollama.tool_call("memory_search", {"query": "docs"})
    running.ollama.reply("The wiki is docs.internal.")
    await running.push(slack.app_mention("<@UBOT> where is the wiki?"))

    # The second search repeats the status, so it is not set again.
    assert [s["status"] for s in slack.calls_to(SET_STATUS)] == [THINKING, SEARCHING]
    calls = [call.method for call in slack.calls]
    assert calls.index(SET_STATUS) < calls.index(START)


# --- where Slack will not stream --------------------------------------------------------------


@pytest.mark.parametrize("error", ["not_allowed", "missing_scope", "unknown_method"])
async def test_a_refused_stream_is_one_post_and_not_tried_again(
    running: Running, caplog: pytest.LogCaptureFixture, error: str
) -> None:
    slack = running.slack
    slack.fail(START, error)
    caplog.set_level(logging.INFO)
    for question in ("where is the wiki?", "and the runbook?"):
        running.ollama.reply(f"Answer to: {question}")
        await running.push(slack.app_mention(f"<@UBOT> {question}"))

    assert [(p.text, p.stream) for p in slack.posts] == [
        ("Answer to: where is the wiki?", []),
        ("Answer to: and the runbook?", []),
    ]
    assert len(slack.calls_to(START)) == 1
    assert methods(slack) == [START, "chat.postMessage", "chat.postMessage"]
    [line] = stream_log(caplog)
    assert line.levelno == logging.INFO and error in line.getMessage()
    assert START in line.getMessage() and "\n" not in line.getMessage()


async def test_a_passing_refusal_posts_that_reply_whole_and_the_next_one_streams(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    slack = running.slack
    slack.fail(START, "internal_error")
    caplog.set_level(logging.INFO)
    running.ollama.reply("First answer.")
    await running.push(slack.app_mention("<@UBOT> first?"))
    running.ollama.reply("Second answer.")
    await running.push(slack.app_mention("<@UBOT> second?"))

    first, second = slack.posts
    assert (first.text, first.stream) == ("First answer.", [])
    assert second.stream and second.current == "Second answer."
    [line] = stream_log(caplog)
    assert "internal_error" in line.getMessage() and "this reply" in line.getMessage()


async def test_a_reply_at_the_top_of_a_dm_is_posted_whole(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    slack = running.slack
    caplog.set_level(logging.INFO)
    for question in ("hello there", "still there?"):
        running.ollama.reply(f"Hi alice, about: {question}")
        await running.push(slack.message(question, channel="D1"))

    assert [(p.channel, p.thread_ts, p.text) for p in slack.posts] == [
        ("D1", None, "Hi alice, about: hello there"),
        ("D1", None, "Hi alice, about: still there?"),
    ]
    assert slack.calls_to(START) == [] and slack.calls_to(SET_STATUS) == []
    [line] = stream_log(caplog)  # said once, not for every DM
    assert line.levelno == logging.INFO and "threads" in line.getMessage()


async def test_a_failed_append_leaves_one_message_with_the_final_words(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    slack = running.slack
    slack.fail(APPEND, "message_not_in_streaming_state")
    caplog.set_level(logging.INFO)
    running.ollama.reply("The deploy freeze starts on friday at noon.")
    await running.push(slack.app_mention("<@UBOT> when is the freeze?"))

    [post] = slack.posts
    assert post.stream == ["The"]  # nothing more was streamed after the refusal
    assert post.current == "The deploy freeze starts on friday at noon."
    assert len(slack.calls_to(APPEND)) == 1
    assert methods(slack)[-2:] == [STOP, "chat.update"]
    [line] = stream_log(caplog)
    assert APPEND in line.getMessage() and "message_not_in_streaming_state" in line.getMessage()


# --- the adapter alone -----------------------------------------------------------------------

THREAD = ConversationRef("slack", "C1", thread_id="1690000000.000100", team_id="T1")


@pytest.fixture
async def adapter(fake_slack: FakeSlack) -> AsyncIterator[SlackAdapter]:
    slack = SlackAdapter(
        bot_token=fake_slack.bot_token,
        app_token=fake_slack.app_token,
        api_base_url=fake_slack.api_url,
    )

    async def sink(event: object) -> None:
        pass

    await slack.start(sink)
    try:
        yield slack
    finally:
        await slack.close()


async def test_editing_a_message_a_crash_left_streaming_stops_it_first(
    adapter: SlackAdapter, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    stream = adapter.stream_reply(THREAD, UserRef("slack", "UALICE", "alice"))
    await stream.show("The freeze starts")
    assert stream.posted is not None
    fake_slack.calls.clear()
    with caplog.at_level(logging.WARNING):
        await adapter.edit(stream.posted, "The freeze starts\n\n⚠️ (cut short)")

    [post] = fake_slack.posts
    assert isinstance(post, Post) and not post.streaming
    assert post.current == "The freeze starts\n\n⚠️ (cut short)"
    assert [c.method for c in fake_slack.calls] == ["chat.update", STOP, "chat.update"]
    assert caplog.records == []  # the first refusal was expected, not an error


async def test_a_text_too_long_for_one_message_is_cut_not_split(
    adapter: SlackAdapter, fake_slack: FakeSlack
) -> None:
    text = "cats & dogs " * 1000  # the core splits replies; this one it did not
    await adapter.send(THREAD, text)
    await adapter.stream_reply(THREAD, UserRef("slack", "UALICE", "alice")).finish(text)

    assert len(fake_slack.posts) == 2
    for post in fake_slack.posts:
        assert len(post.current) <= SLACK_TEXT_LIMIT and post.current.endswith(" …")
        assert post.current.startswith("cats &amp; dogs cats")
