"""`lorebot run` as a subprocess: the environment that points it at the fakes, and the
process itself, killed if a test leaves it running."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack


def daemon_env(tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOREBOT_")}
    env.pop("STATE_DIRECTORY", None)
    env.update(
        LOREBOT_DATABASE__PATH=str(tmp_path / "daemon.db"),
        LOREBOT_OLLAMA__HOST=fake_ollama.url,
        LOREBOT_SLACK__BOT_TOKEN=fake_slack.bot_token,
        LOREBOT_SLACK__APP_TOKEN=fake_slack.app_token,
        LOREBOT_SLACK__API_BASE_URL=fake_slack.api_url,
        LOREBOT_BOT__SHUTDOWN_TIMEOUT_S="10",
        LOREBOT_SKILLS__HOME_ROOT=str(tmp_path / "home-skills"),
        LOREBOT_SKILLS__USER_ROOT=str(tmp_path / "user-skills"),
    )
    return env


@asynccontextmanager
async def daemon(
    tmp_path: Path, env: dict[str, str], *args: str, run_args: Sequence[str] = ()
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`lorebot [args] run [run_args]` in `tmp_path`, its output in `daemon.log` there."""
    log = (tmp_path / "daemon.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        *args,
        "run",
        *run_args,
        cwd=tmp_path,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        log.close()
