"""`lorebot history import PATH`: bring past conversations from Slack and Discord exports
into lorebot's message history, where recall finds them."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from memory.transfer.history_import import Collector

_WORKSPACE = re.compile(r"^(?:https://)?([a-z0-9][a-z0-9-]*)(?:\.slack\.com)?/?$", re.IGNORECASE)


def add_parser(commands: Any) -> None:
    history = commands.add_parser("history", help="bring past conversations into lorebot")
    sub = history.add_subparsers(title="history commands", metavar="ACTION", required=True)
    p = sub.add_parser(
        "import",
        help="import a Slack export, DiscordChatExporter JSON or JSON Lines (all or nothing)",
        description="Import past messages into the conversations they were written in, "
        "where recall finds them. Importing the same export again adds nothing.",
    )
    p.add_argument("path", type=Path, metavar="PATH", help="an export ZIP, folder or file")
    p.add_argument(
        "--include-private",
        action="store_true",
        help="also DMs and private channels (each readable only where it was)",
    )
    p.add_argument("--include-bots", action="store_true", help="also messages of bots")
    p.add_argument(
        "--include-system", action="store_true", help="also joins, topic changes and the like"
    )
    p.add_argument(
        "--slack-workspace",
        type=_workspace_url,
        metavar="URL",
        help="e.g. https://acme.slack.com, so imported Slack messages link to the original",
    )
    p.set_defaults(command=cmd_import)


def _workspace_url(text: str) -> str:
    match = _WORKSPACE.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"expected a workspace like https://acme.slack.com, got {text!r}"
        )
    return f"https://{match.group(1).lower()}.slack.com"


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cli.history_readers import iter_history
    from bot.cli.progress import progress_bar
    from bot.daemon.lockfile import DatabaseLock
    from bot.storage import open_memory
    from memory.transfer.history_import import Collector, ImportOptions

    # One transaction holds the database for the whole import: a running daemon would
    # wait on it and could fail its own writes.
    if DatabaseLock(settings.database.path).held_elsewhere():
        raise UserError(f"lorebot is running on {settings.database.path}: stop it first")
    options = ImportOptions(
        include_private=args.include_private,
        include_bots=args.include_bots,
        include_system=args.include_system,
        slack_workspace_url=args.slack_workspace or "",
    )
    if not args.path.exists():
        raise UserError(f"{args.path} does not exist")
    memory = await open_memory(settings, prepare=False)
    try:
        with progress_bar("file") as progress:
            collector = Collector(options, progress)
            added = await memory.log.import_messages(iter_history(args.path, collector))
    finally:
        await memory.close()
    print(summary(args.path, collector, added))
    return 0


def summary(path: Path, collector: Collector, added: int) -> str:
    """`imported 120 new messages into 14 conversations from PATH; 3 already there; skipped …`."""
    conversations = len(collector.conversations)
    line = f"imported {added} new messages into {conversations} conversations from {path}"
    if collector.count > added:
        line += f"; {collector.count - added} already there"
    hints = {
        "bot messages": "--include-bots",
        "system messages": "--include-system",
        "private conversations": "--include-private",
        "private messages": "--include-private",
    }
    skipped = [
        f"{count} {kind}" + (f" ({hints[kind]})" if kind in hints else "")
        for kind, count in sorted(collector.skipped.items())
    ]
    return line + ("; skipped " + ", ".join(skipped) if skipped else "")
