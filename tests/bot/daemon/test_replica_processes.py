"""Two real `lorebot run` processes on one PostgreSQL database, against the fake Slack,
Discord and Ollama: both hold a Slack connection, only the leader holds Discord's gateway,
and when the leader is killed (SIGKILL: no clean stop) the standby takes the gateway
within 15 s and answers there, once; a Slack event whose replica was killed before it
acknowledged the event, or that reached a replica finishing its turns after SIGTERM, is
answered, once, by the other when Slack sends it again; and events a killed replica took
but had not begun are answered by the other, in order, with the turn it had begun not
run again; and a reply a killed replica was streaming is marked cut short by the other."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path

import psycopg

from adapters.slack.stream import STREAM_INTERVAL_S
from bot.core.live_reply import CUT_SHORT
from bot.core.replies import ABANDONED_REPLY
from memory.stores.inbox import CLAIM_LEASE
from tests.fakes.discord import BOT as DISCORD_BOT
from tests.fakes.discord import TOKEN as DISCORD_TOKEN
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.daemon import daemon, daemon_env

TAKE_OVER_WITHIN_S = 15.0


def _two_replicas(
    tmp_path: Path, ollama: FakeOllama, slack: FakeSlack, url: str, **more: str
) -> tuple[list[Path], list[dict[str, str]]]:
    """The folders and environments of two replicas on the database at `url`."""
    folders, envs = [tmp_path / "a", tmp_path / "b"], []
    for folder in folders:
        folder.mkdir()
        envs.append({**daemon_env(folder, ollama, slack), "LOREBOT_DATABASE__URL": url, **more})
    return folders, envs


async def test_the_standby_takes_discord_within_15_s_of_the_leader_being_killed(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    fake_discord: FakeDiscord,
    pg_url: str,
) -> None:
    fake_ollama.default_reply = lambda body: "Answered."
    folders, envs = _two_replicas(
        tmp_path,
        fake_ollama,
        fake_slack,
        pg_url,
        LOREBOT_DISCORD__TOKEN=DISCORD_TOKEN,
        LOREBOT_DISCORD__API_BASE_URL=fake_discord.api_base_url,
        LOREBOT_DISCORD__GATEWAY_URL=fake_discord.gateway_url,
    )

    async with daemon(folders[0], envs[0]) as leader:
        await fake_discord.wait_until(lambda: fake_discord.identifies, within=30)
        async with daemon(folders[1], envs[1]) as standby:
            await fake_slack.wait_for(lambda: fake_slack.connections == 2, within=30)
            await asyncio.sleep(3)  # a few of the standby's tries at the lock
            assert len(fake_discord.identifies) == 1  # only the leader holds the gateway

            leader.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            await fake_discord.wait_until(
                lambda: len(fake_discord.identifies) == 2, within=TAKE_OVER_WITHIN_S
            )
            took_over_s = time.monotonic() - killed
            await asyncio.sleep(1)  # the new gateway session gets ready

            await fake_discord.send_message(
                f"<@{DISCORD_BOT.id}> still there?", mentions=[DISCORD_BOT]
            )
            [reply] = await fake_discord.wait_for_posts(1, within=20.0)
            standby.send_signal(signal.SIGTERM)
            async with asyncio.timeout(15):
                assert await standby.wait() == 0
    assert reply.content == "Answered."
    assert took_over_s < TAKE_OVER_WITHIN_S
    log = (folders[1] / "daemon.log").read_text()
    assert "leads" in log and DISCORD_TOKEN not in log


async def test_an_event_unacknowledged_by_a_killed_replica_is_answered_by_the_other(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, pg_url: str
) -> None:
    fake_ollama.default_reply = lambda body: "Answered once."
    folders, envs = _two_replicas(tmp_path, fake_ollama, fake_slack, pg_url)
    async with daemon(folders[0], envs[0]) as first:
        await fake_slack.wait_for(lambda: fake_slack.connections == 1, within=30)
        async with daemon(folders[1], envs[1]):
            await fake_slack.wait_for(lambda: fake_slack.connections == 2, within=30)
            lookup = fake_slack.hold("users.info")  # the first replica is still taking it
            body = fake_slack.app_mention("<@UBOT> who is on call?")
            sent = asyncio.create_task(fake_slack.push(body, to=0, within=30))
            await fake_slack.wait_for(lambda: fake_slack.calls_to("users.info"), within=10)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            assert fake_slack.acks == []  # so Slack sends it again (it would not otherwise)
            lookup.set()
            # Slack had no acknowledgement: it sends the event again, to a live connection.
            await fake_slack.push(body, retry_attempt=1, retry_reason="timeout", within=15)
            await fake_slack.wait_for(lambda: fake_slack.posts, within=20)
            await asyncio.sleep(2)  # no second answer comes
            sent.cancel()
    assert [p.text for p in fake_slack.posts] == ["Answered once."]
    assert len(fake_ollama.chat_requests) == 1


async def test_a_replica_stopping_finishes_its_turn_and_leaves_new_events_to_the_other(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, pg_url: str
) -> None:
    folders, envs = _two_replicas(tmp_path, fake_ollama, fake_slack, pg_url)
    async with daemon(folders[0], envs[0]) as first:
        await fake_slack.wait_for(lambda: fake_slack.connections == 1, within=30)
        async with daemon(folders[1], envs[1]):
            await fake_slack.wait_for(lambda: fake_slack.connections == 2, within=30)
            fake_ollama.delay(2.0)
            fake_ollama.reply("The slow answer.")
            await fake_slack.push(fake_slack.app_mention("<@UBOT> think hard"), to=0)
            await fake_ollama.wait_for_requests(1, within=10)
            first.send_signal(signal.SIGTERM)  # while its turn waits on the model
            await asyncio.sleep(0.5)
            fake_ollama.reply("The other one answers.")
            later = fake_slack.app_mention("<@UBOT> and now?")
            with contextlib.suppress(TimeoutError):  # left unacknowledged by the stopping one
                await fake_slack.push(later, to=0, within=1.5)
            assert len(fake_slack.acks) == 1
            await fake_slack.push(later, retry_attempt=1, retry_reason="timeout", to=1)
            async with asyncio.timeout(20):
                assert await first.wait() == 0
            await fake_slack.wait_for(lambda: len(fake_slack.posts) == 2, within=20)
    answers = sorted(p.text for p in fake_slack.posts)
    assert answers == ["The other one answers.", "The slow answer."]


async def test_what_a_killed_replica_took_is_answered_by_the_other_in_order(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, pg_url: str
) -> None:
    folders, envs = _two_replicas(tmp_path, fake_ollama, fake_slack, pg_url)
    async with daemon(folders[0], envs[0]) as first:
        await fake_slack.wait_for(lambda: fake_slack.connections == 1, within=30)
        async with daemon(folders[1], envs[1]) as second:
            await fake_slack.wait_for(lambda: fake_slack.connections == 2, within=30)
            fake_ollama.delay(60.0)  # the first replica's turn never ends
            fake_ollama.reply("Never shown.")
            fake_ollama.reply("The second answer.")
            await fake_slack.push(fake_slack.app_mention("<@UBOT> think hard"), to=0)
            await fake_ollama.wait_for_requests(1, within=10)
            # The same channel's next event reaches the other replica: it is stored and
            # acknowledged there, and waits, for the first replica handles the channel.
            await fake_slack.push(fake_slack.app_mention("<@UBOT> and then?"), to=1)
            await asyncio.sleep(1)
            assert len(fake_ollama.chat_requests) == 1 and fake_slack.posts == []
            first.send_signal(signal.SIGKILL)
            await first.wait()
            killed = time.monotonic()
            await fake_slack.wait_for(
                lambda: len(fake_slack.posts) == 2, within=CLAIM_LEASE.total_seconds() + 15
            )
            taken_up_s = time.monotonic() - killed
            await asyncio.sleep(2)  # nothing more comes
            second.send_signal(signal.SIGTERM)
            async with asyncio.timeout(15):
                assert await second.wait() == 0
    assert [p.text for p in fake_slack.posts] == [ABANDONED_REPLY, "The second answer."]
    assert len(fake_ollama.chat_requests) == 2  # the begun turn was not asked again
    assert taken_up_s < CLAIM_LEASE.total_seconds() + 5


async def test_a_reply_a_killed_replica_was_streaming_is_marked_cut_short_by_the_other(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, pg_url: str
) -> None:
    folders, envs = _two_replicas(
        tmp_path, fake_ollama, fake_slack, pg_url, LOREBOT_OLLAMA__TIMEOUT_S="120"
    )
    async with daemon(folders[0], envs[0]) as first:
        await fake_slack.wait_for(lambda: fake_slack.connections == 1, within=30)
        async with daemon(folders[1], envs[1]) as second:
            await fake_slack.wait_for(lambda: fake_slack.connections == 2, within=30)
            # Words, then more once Slack's stream interval has passed (so they are shown),
            # then nothing: the turn is still running when its replica is killed.
            partial, more = "The incident began", " at the load balancer"
            fake_ollama.stream_stall(partial=partial, more=more, after_s=STREAM_INTERVAL_S + 0.5)
            fake_ollama.reply("Still here.")
            await fake_slack.push(fake_slack.app_mention("<@UBOT> what happened?"), to=0)
            await fake_slack.wait_for(
                lambda: fake_slack.posts and _shown(fake_slack.posts[0]), within=15
            )
            [cut] = fake_slack.posts  # the reply being streamed, as far as it got
            shown = _shown(cut)
            assert (partial + more).startswith(shown)
            await _until_recorded(pg_url, cut.ts)  # what it shows is in the database
            first.send_signal(signal.SIGKILL)
            await first.wait()
            # Meanwhile another channel is answered by the replica left, once.
            await fake_slack.push(fake_slack.app_mention("<@UBOT> hello?", channel="C9"), to=-1)
            await fake_slack.wait_for(
                lambda: CUT_SHORT in _shown(cut), within=CLAIM_LEASE.total_seconds() + 15
            )
            await asyncio.sleep(2)  # nothing more comes
            second.send_signal(signal.SIGTERM)
            async with asyncio.timeout(15):
                assert await second.wait() == 0
    assert _shown(cut) == f"{shown}\n\n{CUT_SHORT}"
    texts = [_shown(p) for p in fake_slack.posts]
    assert texts.count("Still here.") == 1 and ABANDONED_REPLY not in texts
    assert len(texts) == 2


async def _until_recorded(url: str, message_id: str) -> None:
    """Wait until the streamed reply `message_id` is in the live replies table."""
    async with (
        await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
        asyncio.timeout(10),
    ):
        while not await (  # noqa: ASYNC110 - another process writes it
            await conn.execute("SELECT 1 FROM live_replies WHERE message_id = %s", (message_id,))
        ).fetchone():
            await asyncio.sleep(0.05)


def _shown(post: object) -> str:
    """What a post shows now: its last edit, else its streamed pieces, else its text."""
    edits, stream, text = post.edits, post.stream, post.text  # type: ignore[attr-defined]
    return edits[-1] if edits else "".join(stream) if stream else text
