"""The Slack adapter end to end: real slack-bolt and slack-sdk against a fake Slack on 127.0.0.1.

Each test runs a real `Bot` (SQLite in a temporary file, the fake Ollama as the model) with a
`SlackAdapter` pointed at `FakeSlack`, pushes events the way Slack does, and looks at what
the bot posted, edited and reacted in Slack.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from adapters.base import AdapterConfigError as ConfigError
from adapters.base import ConversationRef
from adapters.slack.adapter import SlackAdapter, SlackRequestError
from memory import Scope, Viewer, visibility_for
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    FakeSlack,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
    sign,
)
from tests.support.clock import FakeClock
from tests.support.slack import SECRET, Running, start_bot


@pytest.fixture
async def running(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> AsyncIterator[Running]:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock)
    try:
        yield run
    finally:
        await run.bot.stop()


# --- conversations ------------------------------------------------------------------------


async def test_an_app_mention_is_answered_in_its_thread_with_the_models_reply(
    running: Running,
) -> None:
    slack = running.slack
    running.ollama.reply("It is pg-stage-2, says the wiki.")
    body = slack.app_mention(
        "<@UBOT> where is the staging DB, <@UBOB>? See <#C2|ops> and "
        "<https://wiki.example/db|the wiki> &amp; <https://example.com>"
    )
    await slack.push(body)
    assert slack.posts == []  # acknowledged once taken, answered after the ack
    await running.settle()

    [post] = slack.posts
    assert (post.channel, post.thread_ts) == ("C1", body["event"]["ts"])
    assert post.text == "It is pg-stage-2, says the wiki."
    question = running.ollama.chat_requests[-1]["messages"][-1]["content"]
    assert question.endswith(
        "where is the staging DB, @bob? See #ops and the wiki (https://wiki.example/db) "
        "& https://example.com"
    )
    assert "<@" not in question


async def test_a_question_is_found_later_in_the_channels_history_with_its_slack_link(
    running: Running,
) -> None:
    slack = running.slack
    body = slack.app_mention("<@UBOT> the deploy freeze starts on friday at noon")
    await running.push(body)
    ts = body["event"]["ts"]
    here = visibility_for(Viewer(Scope.parse("user:slack/UALICE"), Scope.parse("channel:slack/C1")))
    [question, _reply] = await running.bot.log.search("when does the freeze start", here, k=2)
    assert question.content == "the deploy freeze starts on friday at noon"
    assert question.author_name and question.role == "user"
    assert question.link == f"https://lore-team.slack.com/archives/C1/p{ts.replace('.', '')}"
    elsewhere = visibility_for(
        Viewer(Scope.parse("user:slack/UALICE"), Scope.parse("channel:slack/C2"))
    )
    assert await running.bot.log.search("deploy freeze", elsewhere) == []


async def test_a_mention_inside_a_thread_is_answered_in_that_thread(running: Running) -> None:
    slack = running.slack
    body = slack.app_mention("<@UBOT> help", thread_ts="1690000000.000100")
    await running.push(body)
    [post] = slack.posts
    assert post.thread_ts == "1690000000.000100"
    assert post.text.startswith("Here is what I understand")


async def test_replies_in_the_bots_thread_are_answered_and_other_chatter_is_not(
    running: Running,
) -> None:
    slack = running.slack
    first = slack.app_mention("<@UBOT> which region is staging in?")
    await running.push(first)
    thread = first["event"]["ts"]

    running.ollama.reply("Prod is in eu-west-1.")
    await running.push(slack.message("and prod?", channel="C1", thread_ts=thread))
    assert (slack.posts[-1].text, slack.posts[-1].thread_ts) == ("Prod is in eu-west-1.", thread)

    await running.push(slack.message("lunch anyone?", channel="C1"))
    await running.push(slack.message("unrelated", channel="C1", thread_ts="1690000000.000200"))
    assert len(slack.posts) == 2

    # A reply mentioning the bot arrives twice, as app_mention and as message: one answer.
    text = "<@UBOT> and the DR site?"
    await running.push(slack.app_mention(text, thread_ts=thread))
    await running.push(slack.message(text, channel="C1", thread_ts=thread))
    assert len(slack.posts) == 3
    assert len(running.ollama.chat_requests) == 3


async def test_a_dm_is_answered_at_the_top_level_of_the_dm(running: Running) -> None:
    slack = running.slack
    running.ollama.reply("Hi alice.")
    await running.push(slack.message("hello there", channel="D1"))
    [post] = slack.posts
    assert (post.channel, post.thread_ts, post.text) == ("D1", None, "Hi alice.")
    assert running.ollama.chat_requests[-1]["messages"][-1]["content"].endswith("hello there")


async def test_an_event_is_acknowledged_only_once_lorebot_has_taken_it(running: Running) -> None:
    """Slack sends an event it has no acknowledgement for again, to any of the app's
    connections: one a lorebot could not take (it died while looking up the author) is
    not lost."""
    slack = running.slack
    lookup = slack.hold("users.info")
    body = slack.app_mention("<@UBOT> hello")
    push = asyncio.create_task(slack.push(body, within=10))
    await slack.wait_for(lambda: slack.calls_to("users.info"))
    await asyncio.sleep(0.3)
    assert not push.done() and slack.acks == []  # still taking it: no acknowledgement
    lookup.set()
    envelope = await push
    assert envelope in slack.acked
    assert not await running.bot.seen.first_sighting(f"slack:{body['event_id']}")  # taken
    await running.settle()
    assert len(slack.posts) == 1


async def test_an_event_reaching_a_stopping_lorebot_is_left_unacknowledged(
    running: Running,
) -> None:
    """Slack then gives it to another connection (another replica) instead of losing it."""
    slack = running.slack
    running.bot.dispatcher.stop_accepting()  # as SIGTERM does while turns finish
    with pytest.raises(TimeoutError):
        await slack.push(slack.app_mention("<@UBOT> still there?"), within=1.5)
    await running.adapter.wait_delivered()
    assert slack.acks == [] and slack.posts == []


async def test_a_retried_event_gets_one_reply(running: Running) -> None:
    slack = running.slack
    body = slack.app_mention("<@UBOT> hello")
    await running.push(body)
    await running.push(body, retry_attempt=1, retry_reason="timeout")
    await running.push(body, retry_attempt=2, retry_reason="http_error")
    assert len(slack.posts) == 1
    assert len(running.ollama.chat_requests) == 1
    assert len(slack.acks) == 3


# --- approval cards -----------------------------------------------------------------------


async def test_a_dm_remember_card_is_approved_by_the_requesters_reaction(
    running: Running,
) -> None:
    slack = running.slack
    running.title("vpn-gateway", "the VPN gateway is vpn-2")
    await running.push(slack.message("remember that the VPN gateway is vpn-2", channel="D1"))

    [card] = slack.posts
    assert card.channel == "D1"
    assert "Topic: `vpn-gateway`" in card.text and "Only alice or an admin" in card.text
    assert card.reactions == ["white_check_mark", "x"]
    assert await running.bot.notes.list_notes() == []

    await running.push(slack.reaction(card, "white_check_mark", user="UALICE"))
    [note] = await running.bot.notes.list_notes()
    assert note.body == "the VPN gateway is vpn-2" and str(note.scope) == "user:slack/UALICE"
    [update] = slack.calls_to("chat.update")
    assert (update["channel"], update["ts"]) == ("D1", card.ts)
    assert card.current.startswith("✅ Saved `vpn-gateway`")


async def test_another_users_reaction_changes_nothing(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    slack = running.slack
    running.title("lunch", "lunch is at noon")
    mention = slack.app_mention("<@UBOT> remember that lunch is at noon")
    await running.push(mention)
    [card] = slack.posts
    assert card.thread_ts == mention["event"]["ts"]

    with caplog.at_level(logging.INFO, logger="bot.approvals.service"):
        await running.push(slack.reaction(card, "white_check_mark", user="UMALLORY"))
        await running.push(slack.reaction(card, "white_check_mark", user="UBOT"))  # the echo
    # Mallory's ✅ reached the approvals and was turned down there.
    assert any(
        "UMALLORY" in r.getMessage() for r in caplog.records if r.name == "bot.approvals.service"
    )
    assert await running.bot.notes.list_notes() == []
    assert slack.calls_to("chat.update") == [] and card.edits == []

    await running.push(slack.reaction(card, "x", user="UALICE"))
    assert card.current.startswith("❌ Discarded")
    assert await running.bot.notes.list_notes() == []


async def test_an_admin_may_approve_someone_elses_card(running: Running) -> None:
    slack = running.slack
    running.title("deploy-day", "deploys happen on tuesdays")
    await running.push(slack.app_mention("<@UBOT> remember that deploys happen on tuesdays"))
    [card] = slack.posts
    await running.push(slack.reaction(card, "white_check_mark", user="UADMIN"))
    [note] = await running.bot.notes.list_notes()
    assert str(note.scope) == "channel:slack/C1"
    assert card.current.startswith("✅ Saved")


# --- what goes out ------------------------------------------------------------------------


async def test_a_model_reply_cannot_ping_the_channel(running: Running) -> None:
    slack = running.slack
    running.ollama.reply(
        "Deploying now <!channel> <!here|here> <@UBOB>, also @everyone and @here: "
        "see **the notes** & [runbook](https://wiki.example/run)"
    )
    await running.push(slack.app_mention("<@UBOT> announce the deploy"))
    [post] = slack.posts
    assert "<!" not in post.text and "<@" not in post.text
    assert "&lt;!channel&gt;" in post.text and "&lt;!here|here&gt;" in post.text
    for word in ("@everyone", "@here", "@channel"):
        assert word not in post.text
    assert "*the notes* &amp; <https://wiki.example/run|runbook>" in post.text


async def test_a_long_reply_is_split_below_slacks_limit(running: Running) -> None:
    slack = running.slack
    paragraphs = [f"Part {i}: " + "cats & dogs " * 50 for i in range(12)]
    running.ollama.reply("\n\n".join(paragraphs))
    body = slack.app_mention("<@UBOT> tell me everything")
    await running.push(body)
    assert len(slack.posts) >= 3
    assert all(len(post.text) <= 4000 for post in slack.posts)
    assert {post.thread_ts for post in slack.posts} == {body["event"]["ts"]}
    combined = "\n\n".join(post.text for post in slack.posts)
    assert all(f"Part {i}:" in combined for i in range(12))
    assert combined.count("cats &amp; dogs") == 12 * 50


async def test_rate_limited_calls_are_retried(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    # slack-sdk waits Retry-After plus up to a second of jitter; no jitter here.
    monkeypatch.setattr(random, "random", lambda: 0.0)
    slack = running.slack
    slack.rate_limit("chat.postMessage", retry_after=0)
    running.ollama.reply("Still here.")
    await running.push(slack.app_mention("<@UBOT> ping"))
    assert [post.text for post in slack.posts] == ["Still here."]
    assert len(slack.calls_to("chat.postMessage")) == 2


# --- Socket Mode and HTTP ------------------------------------------------------------------


async def test_socket_mode_acks_every_envelope(running: Running) -> None:
    slack = running.slack
    await running.push(slack.message("remember that the wiki is docs.internal", channel="D1"))
    [card] = slack.posts
    chatter = slack.message("lunch?", channel="C1")
    bodies = [
        slack.app_mention("<@UBOT> hi"),
        slack.message("hello", channel="D1"),
        chatter,
        slack.message("edited", channel="C1", subtype="message_changed"),
        slack.message("my own words", channel="D1", user="UBOT"),
        slack.message("beep", channel="C1", bot_id="BOTHER", thread_ts=card.ts),
        slack.event_body({"type": "channel_created", "channel": {"id": "C9", "name": "new"}}),
        slack.reaction(card, "eyes", user="UBOB"),
        slack.reaction_to("C1", chatter["event"]["ts"], "x", author="UALICE"),
    ]
    envelopes = [await slack.push(body) for body in bodies]
    await running.settle()
    assert set(envelopes) <= set(slack.acked)
    assert len(slack.acks) == len(bodies) + 1
    # Only the mention and the DM were answered; nothing decided the card.
    assert len(slack.posts) == 3 and card.edits == []


async def test_socket_mode_reconnects_when_slack_refreshes_the_connection(
    running: Running,
) -> None:
    slack = running.slack
    await slack.refresh()
    await slack.wait_for(lambda: slack.connections == 2)
    running.ollama.reply("Still listening.")
    await running.push(slack.app_mention("<@UBOT> still there?"))
    assert [post.text for post in slack.posts] == ["Still listening."]
    assert len(slack.calls_to("apps.connections.open")) == 2
    assert running.adapter.connected


async def test_http_mode_checks_signatures_and_answers_signed_events(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    run = await start_bot(
        tmp_path,
        fake_ollama,
        fake_slack,
        clock,
        app_token=None,
        signing_secret=SECRET,
        listen="127.0.0.1:0",
    )
    try:
        assert run.adapter.bound_address is not None and run.adapter.connected
        url = f"http://127.0.0.1:{run.adapter.bound_address[1]}/slack/events"
        fake_ollama.reply("Hello over HTTP.")
        body = json.dumps(fake_slack.app_mention("<@UBOT> are you there?"))
        async with aiohttp.ClientSession() as http:
            challenge = json.dumps({"token": "t", "challenge": "c-123", "type": "url_verification"})
            async with http.post(url, data=challenge, headers=sign(SECRET, challenge)) as resp:
                assert resp.status == 200 and (await resp.json())["challenge"] == "c-123"

            stale = int(time.time()) - 6 * 60
            for headers in (
                sign("not-the-secret", body),
                sign(SECRET, body, timestamp=stale),
                {"Content-Type": "application/json"},
            ):
                async with http.post(url, data=body, headers=headers) as resp:
                    assert resp.status == 401
            await run.settle()
            assert fake_slack.posts == [] and fake_ollama.chat_requests == []

            async with http.post(url, data=body, headers=sign(SECRET, body)) as resp:
                assert resp.status == 200
            await run.settle()
            retry = {**sign(SECRET, body), "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "x"}
            async with http.post(url, data=body, headers=retry) as resp:
                assert resp.status == 200
            await run.settle()
        [post] = fake_slack.posts
        assert post.text == "Hello over HTTP." and post.thread_ts is not None
        assert fake_slack.connections == 0  # no Socket Mode in HTTP mode
    finally:
        await run.bot.stop()


# --- start-up and errors ------------------------------------------------------------------


async def test_start_identifies_the_bot_and_names_missing_scopes(
    fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake_slack.scopes = "app_mentions:read,chat:write,im:history,channels:history"
    adapter = SlackAdapter(
        bot_token=fake_slack.bot_token,
        app_token=fake_slack.app_token,
        api_base_url=fake_slack.api_url,
    )

    async def sink(event: object) -> None:
        pass

    assert not adapter.connected
    with caplog.at_level(logging.INFO, logger="adapters.slack.connection"):
        levels = _logger_levels()
        await adapter.start(sink)
        # bolt copies the root level onto loggers it names; none of them may be ours.
        assert _logger_levels() == levels
        assert adapter.connected
        await adapter.close()
        assert not adapter.connected
        await adapter.close()  # closing twice is harmless
    assert (adapter.bot_user_id, adapter.team_id) == ("UBOT", "T1")
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for scope in ("groups:history", "reactions:read", "reactions:write", "users:read"):
        assert scope in warning
    assert "chat:write" not in warning and "reinstall" in warning
    assert fake_slack.connections == 1
    assert fake_slack.bot_token not in caplog.text and fake_slack.app_token not in caplog.text


def _logger_levels() -> dict[str, int]:
    loggers = logging.root.manager.loggerDict.items()
    return {
        name: logger.level
        for name, logger in loggers
        if isinstance(logger, logging.Logger)
        and logger.level != logging.NOTSET
        and not name.startswith(("slack_bolt", "slack_sdk"))
    }


@pytest.mark.parametrize(
    ("which", "env_key"),
    [("bot", "LOREBOT_SLACK__BOT_TOKEN"), ("app", "LOREBOT_SLACK__APP_TOKEN")],
)
async def test_a_rejected_token_stops_the_start_with_what_to_fix(
    fake_slack: FakeSlack, which: str, env_key: str
) -> None:
    tokens = {"bot_token": fake_slack.bot_token, "app_token": fake_slack.app_token}
    wrong = f"{'xoxb' if which == 'bot' else 'xapp'}-0000-revoked"
    tokens[f"{which}_token"] = wrong
    adapter = SlackAdapter(**tokens, api_base_url=fake_slack.api_url)

    async def sink(event: object) -> None:
        pass

    with pytest.raises(ConfigError) as failure:
        await adapter.start(sink)
    assert env_key in str(failure.value) and "invalid_auth" in str(failure.value)
    assert wrong not in str(failure.value)
    assert fake_slack.connections == 0
    await adapter.close()


def test_a_token_of_the_wrong_kind_is_refused_before_connecting() -> None:
    with pytest.raises(ConfigError, match="LOREBOT_SLACK__BOT_TOKEN"):
        SlackAdapter(bot_token="xapp-1-swapped", app_token="xoxb-swapped")
    with pytest.raises(ConfigError, match="LOREBOT_SLACK__APP_TOKEN"):
        SlackAdapter(bot_token="xoxb-1", app_token="xoxb-1")
    with pytest.raises(ConfigError, match="LOREBOT_SLACK__SIGNING_SECRET"):
        SlackAdapter(bot_token="xoxb-1", signing_secret="s")  # HTTP mode needs listen too


async def test_http_mode_on_a_busy_port_says_which_setting_to_change(
    fake_slack: FakeSlack,
) -> None:
    async def sink(event: object) -> None:
        pass

    first = SlackAdapter(
        bot_token=fake_slack.bot_token,
        signing_secret=SECRET,
        listen="127.0.0.1:0",
        api_base_url=fake_slack.api_url,
    )
    await first.start(sink)
    try:
        assert first.bound_address is not None
        second = SlackAdapter(
            bot_token=fake_slack.bot_token,
            signing_secret=SECRET,
            listen=f"127.0.0.1:{first.bound_address[1]}",
            api_base_url=fake_slack.api_url,
        )
        with pytest.raises(ConfigError, match="LOREBOT_SLACK__LISTEN"):
            await second.start(sink)
        await second.close()
    finally:
        await first.close()


@pytest.mark.parametrize(
    ("error", "extra", "advice"),
    [
        ("not_in_channel", {}, "/invite @lorebot"),
        ("channel_not_found", {}, "invite the bot"),
        ("missing_scope", {"needed": "chat:write", "provided": "users:read"}, "chat:write"),
        ("invalid_auth", {}, "LOREBOT_SLACK__BOT_TOKEN"),
    ],
)
async def test_a_refused_post_is_one_readable_log_line(
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
    error: str,
    extra: dict[str, str],
    advice: str,
) -> None:
    adapter = SlackAdapter(
        bot_token=fake_slack.bot_token,
        app_token=fake_slack.app_token,
        api_base_url=fake_slack.api_url,
    )

    async def sink(event: object) -> None:
        pass

    await adapter.start(sink)
    try:
        fake_slack.fail("chat.postMessage", error, **extra)
        caplog.clear()
        with pytest.raises(SlackRequestError):
            await adapter.send(ConversationRef("slack", "C9", thread_id="1.2"), "hello")
    finally:
        await adapter.close()
    [record] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    line = record.getMessage()
    assert advice in line and error in line and "\n" not in line and record.exc_info is None
    if error in ("not_in_channel", "channel_not_found"):
        assert "C9" in line


# --- the daemon ---------------------------------------------------------------------------


async def test_the_daemon_answers_a_mention_and_stops_on_sigterm(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("LOREBOT_") and key != "STATE_DIRECTORY"
    }
    env.update(
        LOREBOT_DATABASE__PATH=str(tmp_path / "daemon.db"),
        LOREBOT_OLLAMA__HOST=fake_ollama.url,
        LOREBOT_SLACK__BOT_TOKEN=fake_slack.bot_token,
        LOREBOT_SLACK__APP_TOKEN=fake_slack.app_token,
        LOREBOT_SLACK__API_BASE_URL=fake_slack.api_url,
    )
    fake_ollama.reply("Yes, the daemon is here.")
    log_path = tmp_path / "daemon.log"
    with log_path.open("wb") as log:
        daemon = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "run",
            cwd=tmp_path,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            await fake_slack.wait_for(lambda: fake_slack.connections, within=30)
            body = fake_slack.app_mention("<@UBOT> are you there?")
            await fake_slack.push(body, within=10)
            await fake_slack.wait_for(lambda: fake_slack.posts, within=10)
            daemon.send_signal(signal.SIGTERM)
            async with asyncio.timeout(20):
                code = await daemon.wait()
        finally:
            if daemon.returncode is None:
                daemon.kill()
                await daemon.wait()
    output = log_path.read_text()
    assert code == 0, output
    [post] = fake_slack.posts
    assert (post.channel, post.thread_ts) == ("C1", body["event"]["ts"])
    assert post.text == "Yes, the daemon is here."
    assert fake_slack.bot_token not in output and fake_slack.app_token not in output
