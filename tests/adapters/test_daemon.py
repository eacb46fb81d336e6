"""`lorebot run` as a subprocess against the fakes: shutdown, systemd notify, no token leaks."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

from tests.fakes.discord import BOT as DISCORD_BOT
from tests.fakes.discord import TOKEN as DISCORD_TOKEN
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.daemon import daemon, daemon_env


async def test_sigterm_during_a_slow_reply_delivers_it_and_exits_0(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    fake_ollama.delay(1.5)
    fake_ollama.reply("Worth the wait.")
    env = daemon_env(tmp_path, fake_ollama, fake_slack)
    async with daemon(tmp_path, env, "--debug") as process:
        await fake_slack.wait_for(lambda: fake_slack.connections, within=30)
        await fake_slack.push(fake_slack.app_mention("<@UBOT> think hard"), within=10)
        await fake_ollama.wait_for_requests(1, within=10)
        process.send_signal(signal.SIGTERM)  # while the model is still answering
        async with asyncio.timeout(10):
            code = await process.wait()
    output = (tmp_path / "daemon.log").read_text()
    assert code == 0, output
    assert [p.text for p in fake_slack.posts] == ["Worth the wait."]
    # The full debug log of a whole flow never shows a token.
    for secret in (fake_slack.bot_token, fake_slack.app_token):
        assert secret not in output
        assert secret.split("-", 1)[1] not in output


async def test_systemd_hears_ready_then_stopping(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.setblocking(False)
    env = daemon_env(tmp_path, fake_ollama, fake_slack)
    env.update(NOTIFY_SOCKET=str(tmp_path / "notify.sock"), WATCHDOG_USEC="300000")
    loop = asyncio.get_running_loop()
    messages: list[str] = []

    async def until(text: str) -> None:
        async with asyncio.timeout(30):
            while not any(text in m for m in messages):
                messages.append((await loop.sock_recv(sock, 4096)).decode())

    try:
        async with daemon(tmp_path, env) as process:
            await until("READY=1")
            assert fake_slack.connections == 1  # ready only once Slack is connected
            await until("WATCHDOG=1")
            process.send_signal(signal.SIGTERM)
            await until("STOPPING=1")
            async with asyncio.timeout(10):
                assert await process.wait() == 0
    finally:
        sock.close()
    kinds = [m.split("\n")[0].split("=")[0] for m in messages]
    starting = kinds.index("READY")  # before: requests for more time while the db opens
    assert set(kinds[:starting]) == {"EXTEND_TIMEOUT_USEC"}
    assert kinds[-1] == "STOPPING" and "WATCHDOG" in kinds


async def test_one_daemon_answers_on_slack_and_discord_at_once(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, fake_discord: FakeDiscord
) -> None:
    env = daemon_env(tmp_path, fake_ollama, fake_slack)
    env.update(
        LOREBOT_DISCORD__TOKEN=DISCORD_TOKEN,
        LOREBOT_DISCORD__API_BASE_URL=fake_discord.api_base_url,
        LOREBOT_DISCORD__GATEWAY_URL=fake_discord.gateway_url,
    )
    fake_ollama.default_reply = lambda body: "Answered."
    async with daemon(tmp_path, env) as process:
        await fake_slack.wait_for(lambda: fake_slack.connections, within=30)
        await fake_discord.wait_until(lambda: fake_discord.identifies, within=30)
        await fake_slack.push(fake_slack.app_mention("<@UBOT> from Slack"), within=10)
        await fake_discord.send_message(f"<@{DISCORD_BOT.id}> from Discord", mentions=[DISCORD_BOT])
        await fake_slack.wait_for(lambda: fake_slack.posts, within=20)
        [reply] = await fake_discord.wait_for_posts(1, within=20.0)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(15):
            assert await process.wait() == 0
    assert [p.text for p in fake_slack.posts] == ["Answered."]
    assert reply.content == "Answered."
    output = (tmp_path / "daemon.log").read_text()
    assert DISCORD_TOKEN not in output and fake_slack.bot_token not in output
