"""`lorebot chat`: the whole core in the terminal."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The core is imported by the command, not by `lorebot --help`.
if TYPE_CHECKING:
    from adapters.console.adapter import ConsoleAdapter, OpenCard
    from bot.config.settings import Settings
    from bot.daemon.app import Bot
    from memory.stores.proposals import Proposal


def add_parsers(commands: Any) -> None:
    chat = commands.add_parser(
        "chat",
        help="talk to lorebot in the terminal (reads piped stdin too)",
        description="Talk to lorebot in the terminal. Cards are answered with y (✅) or n "
        "(❌), which answer the newest card of this chat, or with y 12 or n 12, which answer "
        "card #12, also one left open by an earlier chat. At a terminal, Ctrl-C clears the "
        "line (or stops waiting for an answer), Ctrl-D on an empty line ends the chat, and "
        "the lines you type are kept in chat-history beside the database. A line of /quit, "
        "/exit, quit or exit ends the chat too.",
    )
    chat.add_argument("--user", default=None, help="your name (default: your login)")
    where = chat.add_mutually_exclusive_group()
    where.add_argument("--channel", help="speak in this channel instead of a DM")
    where.add_argument("--dm", action="store_true", help="a direct conversation (default)")
    chat.set_defaults(command=cmd_chat)


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"


async def cmd_chat(args: argparse.Namespace, settings: Settings) -> int:
    from adapters.console.adapter import ConsoleAdapter
    from bot.daemon.app import Bot

    console = ConsoleAdapter(
        args.user or _login(),
        args.channel,
        bot_name=settings.bot.name,
        history=_chat_history(settings),
    )
    with _model_state_told(console.interactive):
        async with Bot(settings, [console]) as bot:

            async def open_cards() -> list[OpenCard]:
                pending = await bot.proposals.fetch_pending_in(
                    "console", console.conversation.channel_id
                )
                return [_open_card(p) for p in pending if p.card_message_id is not None]

            banner = await _banner(bot, console) if console.interactive else ""
            await console.run(bot.dispatcher.wait_idle, open_cards, banner)
    return 0


async def _banner(bot: Bot, console: ConsoleAdapter) -> str:
    """What a person sees first: who talks where, the model and whether it answers (once
    it has been asked, within its probe timeout), and how to get help and leave."""
    from bot import __version__

    server = bot.settings.model_server
    health = await bot.model.fetch_health()
    where = "a DM" if console.conversation.is_dm else f"#{console.conversation.channel_id}"
    model = f"model {server.model} via {server.backend}"
    if health["reachable"]:
        state = f"{model} at {server.url} answers"
    else:
        problem = health.get("problem") or "it has not answered yet"
        state = (
            f"{model} does not answer: {problem}\n"
            "  until it does, lorebot answers from its notes; `lorebot doctor` says how to "
            "fix it"
        )
    return (
        f"lorebot {__version__}: chatting as {console.user.name} in {where}\n{state}\n"
        "type help to see what lorebot understands, Ctrl-D to quit"
    )


@contextlib.contextmanager
def _model_state_told(interactive: bool) -> Iterator[None]:
    """With a person at the terminal, the model client's warnings that the model does not
    answer are logged at INFO: the banner says so at the start, and every answer while it
    does not. They would otherwise be the first line of the chat, before the banner."""
    from bot.model.client import Model

    if not interactive:
        yield
        return
    logger = logging.getLogger(Model.__module__)
    demote = _Demote()
    logger.addFilter(demote)
    try:
        yield
    finally:
        logger.removeFilter(demote)


class _Demote(logging.Filter):
    """Turns WARNING records into INFO ones, shown only where INFO is (`--debug`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        return logging.getLogger().isEnabledFor(logging.INFO)


def _chat_history(settings: Settings) -> Path | None:
    """The terminal chat's history file, beside the database (none for `:memory:`)."""
    path = settings.database.path
    return None if str(path) == ":memory:" else path.parent / "chat-history"


def _open_card(proposal: Proposal) -> OpenCard:
    """A pending proposal as the console lists it: `save `staging-db``."""
    from adapters.console.adapter import OpenCard
    from bot.approvals.kinds.registry import get_kind

    assert proposal.card_message_id is not None
    kind = get_kind(proposal.kind)
    what = kind.subject(proposal.payload)
    label = f"{kind.label} `{what}`" if what else kind.label
    return OpenCard(proposal.id, proposal.card_message_id, label)
