"""`lorebot run`: the daemon with every configured adapter, until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import logging
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.errors import UserError

if TYPE_CHECKING:
    import asyncio

    from bot.config.settings import Settings
    from bot.daemon.platforms import Platform

_log = logging.getLogger(__name__)


def no_adapters_message(platforms: Sequence[Platform[Any]] | None = None) -> str:
    """What `run` says without a configured platform: what to set for each one of
    `platforms` (the table of `bot.daemon.platforms` unless given)."""
    from bot.daemon.platforms import PLATFORMS

    platforms = PLATFORMS if platforms is None else platforms
    ways = ", or ".join(f"{p.setup} for {p.title}" for p in platforms)
    pages = " and ".join(f"docs/{p.name}.md" for p in platforms)
    return (
        f"no chat platform is configured: set {ways} (see {pages}), "
        "or try `lorebot chat` in the terminal"
    )


def add_parser(commands: Any) -> None:
    run = commands.add_parser("run", help="run the daemon with every configured chat platform")
    run.add_argument(
        "--replica",
        action="store_true",
        help="run as one of several replicas: refuse to start unless database.url names "
        "the PostgreSQL database they share (on a SQLite file of its own, it would be a "
        "second bot answering everything again)",
    )
    run.set_defaults(command=cmd_run, daemon=True)


async def cmd_run(
    args: argparse.Namespace, settings: Settings, platforms: Sequence[Platform[Any]] | None = None
) -> int:
    import asyncio

    from bot.config.settings import systemd_environment
    from bot.daemon.app import Bot
    from bot.daemon.platforms import PLATFORMS
    from bot.daemon.wiring import build_adapters
    from bot.storage import engine_for

    if getattr(args, "replica", False) and not engine_for(settings).shared:
        raise UserError(
            "`lorebot run --replica` needs database.url (LOREBOT_DATABASE__URL): the "
            "PostgreSQL database the replicas share"
        )
    platforms = PLATFORMS if platforms is None else platforms
    adapters = build_adapters(settings, platforms)
    if not adapters:
        raise UserError(no_adapters_message(platforms))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _on_signal, stop, signum)
    async with Bot(settings, adapters, systemd=systemd_environment()):
        _log.info("lorebot is running with %s", ", ".join(a.platform for a in adapters))
        await stop.wait()
        _log.info("shutting down")
    return 0


def _on_signal(stop: asyncio.Event, signum: int) -> None:
    if stop.is_set():  # a second signal: leave at once
        raise SystemExit(128 + signum)
    _log.info("received %s", signal.Signals(signum).name)
    stop.set()
