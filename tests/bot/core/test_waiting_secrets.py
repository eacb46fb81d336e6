"""Credentials pasted into a message never reach the database through the inbox, where the
message waits until it is answered: not its rows, not the bytes of the SQLite file and its
WAL, not a backup taken while it waits or after it was answered, and not a `--debug` log
of the run, with the platform's real parsing and its own debug lines (slack_bolt's raw
envelope, discord.py's gateway event)."""

from __future__ import annotations

import asyncio
import logging
from argparse import Namespace
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.base import Adapter
from adapters.slack.adapter import SlackAdapter
from bot.cli.backup import cmd_backup
from bot.daemon.app import Bot
from bot.daemon.logs import configure_logging
from tests.fakes.discord import (
    BOT,
    FakeDiscord,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import (
    FakeSlack,
    fake_slack_fixture,  # noqa: F401  (the fake_slack fixture)
)
from tests.support.clock import FakeClock
from tests.support.discord import adapter_for, mention
from tests.support.harness import make_settings
from tests.support.postgres import server_programs

SLACK_TOKEN = "xoxb-2048-7219463850-PastedSlackTokenQ7x"
DISCORD_TOKEN = "MTE5ODc2NTQzMjEwOTg3NjU0Mw.GhIjKl.PastedDiscordTokenQ7xWvUtSrQpOn"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPastedQ7Ke"
PASSWORD = "hunter2-Q7x"
PASTED = (
    f"deploys fail since this morning. The bot token is {SLACK_TOKEN}, the discord one "
    f'{DISCORD_TOKEN}, and the config says {{"aws_secret_access_key": "{AWS_SECRET}", '
    f'"password": "{PASSWORD}"}}'
)
# A part of each secret that escaping (`\/`, `\"`) cannot cut apart in a log line.
FRAGMENTS = (
    "PastedSlackToken",
    "PastedDiscordToken",
    "wJalrXUtnFEMI",
    "bPxRfiCYPasted",
    "hunter2",
)


def leaked(text: str | bytes) -> list[str]:
    """The secrets of `PASTED` that `text` holds."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [fragment for fragment in FRAGMENTS if fragment in text]


@dataclass
class Platform:
    """A chat platform's fake, as the test drives it."""

    adapter: Adapter
    say: Callable[[str], Awaitable[object]]
    replied: Callable[[], Awaitable[object]]
    # A piece of the platform library's own DEBUG line for the raw incoming event.
    raw_line: str


@pytest.fixture(params=["slack", "discord"])
def platform(request: pytest.FixtureRequest) -> Platform:
    if request.param == "slack":
        slack: FakeSlack = request.getfixturevalue("fake_slack")
        adapter = SlackAdapter(
            bot_token=slack.bot_token, app_token=slack.app_token, api_base_url=slack.api_url
        )
        return Platform(
            adapter,
            lambda text: slack.push(slack.app_mention(f"<@UBOT> {text}")),
            lambda: slack.wait_for(lambda: slack.posts),
            "Received message (type: TEXT",
        )
    discord: FakeDiscord = request.getfixturevalue("fake_discord")
    return Platform(
        adapter_for(discord),
        lambda text: discord.send_message(f"{mention(BOT.id)} {text}", mentions=[BOT]),
        lambda: discord.wait_for_posts(1),
        "'t': 'MESSAGE_CREATE'",
    )


@asynccontextmanager
async def debug_logging(secrets: list[str]) -> AsyncIterator[None]:
    """What `lorebot --debug` sets up, for the block."""
    configure_logging(logging.DEBUG, "text", secrets)
    try:
        yield
    finally:
        configure_logging(logging.WARNING, "text", [])


async def stored_copies(bot: Bot, engine: str, tmp_path: Path, name: str) -> dict[str, bytes]:
    """Every place the database's content is now: on SQLite the file and its WAL, and a
    `lorebot backup`; on PostgreSQL the operator's backup, pg_dump."""
    if engine == "sqlite":
        path = bot.settings.database.path
        backup = tmp_path / f"{name}.db"
        await cmd_backup(Namespace(dest=str(backup), force=False), bot.settings)
        files = {"file": path, "wal": path.with_name(path.name + "-wal"), "backup": backup}
        return {what: file.read_bytes() for what, file in files.items() if file.exists()}
    programs = server_programs()
    assert programs is not None
    url = bot.settings.database.url
    assert url is not None
    dump = await asyncio.create_subprocess_exec(
        str(programs / "pg_dump"),
        "--format=plain",
        f"--dbname={url.get_secret_value()}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await dump.communicate()
    assert dump.returncode == 0, err
    return {"pg_dump": out}


async def test_credentials_in_a_waiting_message_reach_no_table_backup_or_debug_log(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    on_each_engine: str,
    platform: Platform,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = make_settings(tmp_path / "bot.db", fake_ollama.url, ollama={"timeout_s": 60})
    bot = Bot(settings, [platform.adapter], clock=clock)
    async with debug_logging(settings.secrets()):
        await bot.start()
        try:
            fake_ollama.hold_chats()  # the turn waits for the model: the event waits too
            fake_ollama.reply("Rotate every one of them now, please.")
            await platform.say(PASTED)
            [asked] = await fake_ollama.wait_for_requests(1)
            waiting = str(await bot.db.scalar("SELECT payload_json FROM inbox"))
            assert "[REDACTED]" in waiting and leaked(waiting) == []
            while_waiting = await stored_copies(bot, on_each_engine, tmp_path, "waiting")

            fake_ollama.release_chats()
            await platform.replied()
            await bot.dispatcher.wait_idle()
            assert await bot.db.scalar("SELECT count(*) FROM inbox") == 0
            answered = await stored_copies(bot, on_each_engine, tmp_path, "answered")
        finally:
            await bot.stop()
        log = capsys.readouterr().err

    # The model reads the message as the history keeps it, now as at every later turn.
    question = asked["messages"][-1]["content"]
    assert question.endswith('{"aws_secret_access_key": "[REDACTED]", "password": "[REDACTED]"}')
    assert leaked(question) == []
    assert {what: leaked(data) for what, data in while_waiting.items()} == dict.fromkeys(
        while_waiting, []
    )
    assert {what: leaked(data) for what, data in answered.items()} == dict.fromkeys(answered, [])
    assert platform.raw_line in log and "[REDACTED]" in log
    assert [line for line in log.splitlines() if leaked(line)] == []
