"""The `lorebot` command line: parsing, logging, and the one place errors become exit codes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from bot import (
    __version__,
    actions_cli,
    backup_cli,
    chat_cli,
    doctor_cli,
    jobs_cli,
    notes_cli,
    run_cli,
    skills_cli,
)
from bot.config import Settings, load_settings
from bot.errors import user_message
from bot.logs import configure_logging

_log = logging.getLogger(__name__)

Command = Callable[[argparse.Namespace, Settings], Coroutine[Any, Any, int]]

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lorebot",
        description="A self-hosted chat-ops bot with reviewed memory, for Slack and Discord.",
    )
    parser.add_argument("--version", action="version", version=f"lorebot {__version__}")
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="TOML config file (or LOREBOT_CONFIG)"
    )
    parser.add_argument("--debug", action="store_true", help="debug logs and full tracebacks")
    parser.add_argument("--log-format", choices=["text", "json"], help="log lines as text or JSON")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    notes_cli.add_parser(commands)
    chat_cli.add_parsers(commands)
    run_cli.add_parser(commands)
    skills_cli.add_parser(commands)
    jobs_cli.add_parser(commands)
    backup_cli.add_parsers(commands)
    actions_cli.add_parser(commands)
    doctor_cli.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `lorebot` console script."""
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
        log_format = args.log_format or settings.observability.log_format
        level = logging.DEBUG if args.debug else logging.getLevelName(settings.log_level)
        if not args.debug and not getattr(args, "daemon", False):
            level = max(level, logging.WARNING)  # one-shot commands: only what goes wrong
        configure_logging(level, log_format, settings.secrets())
        command: Command = args.command
        return asyncio.run(command(args, settings))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        message = user_message(exc)
        if message is not None:
            if args.debug:
                _log.exception("user error")
            print(f"lorebot: {message}", file=sys.stderr)
            return EXIT_USER_ERROR
        if args.debug:
            raise
        print(
            f"lorebot: unexpected error: {type(exc).__name__}: {exc} "
            "(run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
