"""`lorebot run` in Slack's HTTP Events mode, configured only through the environment: it
serves signed events on the configured address and path, and answers them in Slack."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from pathlib import Path

import aiohttp

from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack, sign
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.daemon import daemon, daemon_env

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def post(
    http: aiohttp.ClientSession, url: str, body: str, headers: dict[str, str]
) -> tuple[int, str]:
    async with http.post(url, data=body, headers=headers) as response:
        return response.status, await response.text()


def read_log(path: Path) -> str:
    return path.read_text()


async def url_check_answered(
    http: aiohttp.ClientSession, url: str, process: asyncio.subprocess.Process, log: Path
) -> None:
    """Send Slack's URL check until the daemon answers it (it is still starting at first)."""
    check = json.dumps({"token": "t", "challenge": "c-123", "type": "url_verification"})
    async with asyncio.timeout(30):
        while True:
            assert process.returncode is None, read_log(log)
            try:
                status, text = await post(http, url, check, sign(SECRET, check))
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
                continue
            assert status == 200 and json.loads(text)["challenge"] == "c-123"
            return


async def test_lorebot_run_serves_signed_slack_events_on_the_configured_address(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    port = free_port()
    env = daemon_env(tmp_path, fake_ollama, fake_slack)
    del env["LOREBOT_SLACK__APP_TOKEN"]  # no Socket Mode: Slack POSTs its events
    env.update(
        LOREBOT_SLACK__SIGNING_SECRET=SECRET,
        LOREBOT_SLACK__LISTEN=f"127.0.0.1:{port}",
        LOREBOT_SLACK__EVENTS_PATH="/hooks/slack",
    )
    fake_ollama.reply("Hello over HTTP.")
    body = fake_slack.app_mention("<@UBOT> are you there?")
    url = f"http://127.0.0.1:{port}/hooks/slack"
    async with daemon(tmp_path, env) as process, aiohttp.ClientSession() as http:
        await url_check_answered(http, url, process, tmp_path / "daemon.log")
        text = json.dumps(body)
        assert (await post(http, url, text, sign("not-the-secret", text)))[0] == 401
        assert (await post(http, url, text, sign(SECRET, text)))[0] == 200
        await fake_slack.wait_for(lambda: fake_slack.posts, within=20)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(15):
            code = await process.wait()
    assert code == 0, (tmp_path / "daemon.log").read_text()
    [answer] = fake_slack.posts
    assert (answer.text, answer.thread_ts) == ("Hello over HTTP.", body["event"]["ts"])
    assert fake_slack.connections == 0 and fake_slack.calls_to("apps.connections.open") == []
