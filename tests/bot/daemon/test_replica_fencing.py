"""A replica paused past its lease in the middle of a turn (SIGSTOP: a frozen VM, a long
pause) wakes up after the other replica took its conversation over: two real
`lorebot run --replica` processes on one PostgreSQL database, against the fake Slack and
Ollama. The other replica says the turn was cut short and answers the next message; the
paused one, woken, posts nothing and says in its log that it stopped."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from bot.core.replies import ABANDONED_REPLY
from memory.stores.inbox import CLAIM_LEASE
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.daemon import daemon, daemon_env
from tests.support.polling import until

STOPPED = "stopped handling event"


async def test_a_replica_paused_past_its_lease_posts_nothing_after_the_take_over(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, pg_url: str
) -> None:
    folders = [tmp_path / "a", tmp_path / "b"]
    envs = []
    for folder in folders:
        folder.mkdir()
        envs.append(
            {**daemon_env(folder, fake_ollama, fake_slack), "LOREBOT_DATABASE__URL": pg_url}
        )
    replica = ["--replica"]
    async with daemon(folders[0], envs[0], run_args=replica) as paused:
        await fake_slack.wait_for(lambda: fake_slack.connections == 1, within=30)
        async with daemon(folders[1], envs[1], run_args=replica) as other:
            await fake_slack.wait_for(lambda: fake_slack.connections == 2, within=30)
            fake_ollama.hold_chats()
            fake_ollama.reply("The first answer.")
            fake_ollama.reply("The second answer.")
            await fake_slack.push(fake_slack.app_mention("<@UBOT> first question"), to=0)
            await fake_ollama.wait_for_requests(1)  # its turn waits on the model
            paused.send_signal(signal.SIGSTOP)
            fake_ollama.release_chats()  # the first answer waits, unread, in its socket

            # The same channel's next message reaches the other replica, which takes the
            # conversation over once the paused one's claim lapsed.
            await fake_slack.push(fake_slack.app_mention("<@UBOT> second question"), to=1)
            await fake_slack.wait_for(
                lambda: len(fake_slack.posts) == 2, within=CLAIM_LEASE.total_seconds() + 20
            )
            log = folders[0] / "daemon.log"
            paused.send_signal(signal.SIGCONT)
            await until(lambda: STOPPED in log.read_text())
            other.send_signal(signal.SIGTERM)
            paused.send_signal(signal.SIGTERM)
            async with asyncio.timeout(20):
                assert await other.wait() == 0
                assert await paused.wait() == 0
    assert [p.text for p in fake_slack.posts] == [ABANDONED_REPLY, "The second answer."]
    assert "another replica took slack/" in log.read_text()
