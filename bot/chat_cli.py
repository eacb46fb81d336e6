"""`lorebot chat`: the whole core in the terminal, and `lorebot proposals` for admins."""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from adapters.console import ConsoleAdapter
from bot.app import Bot
from bot.approvals import build_approvals
from bot.config import Settings
from bot.lockfile import DatabaseLock
from bot.notes_cli import cli_actor, open_store
from memory.events import EventLog
from memory.proposals import ProposalStore


def add_parsers(commands: Any) -> None:
    chat = commands.add_parser(
        "chat",
        help="talk to lorebot in the terminal (reads piped stdin too)",
        description="Talk to lorebot in the terminal. Cards are answered with y (✅) or n (❌).",
    )
    chat.add_argument("--user", default=None, help="your name (default: your login)")
    where = chat.add_mutually_exclusive_group()
    where.add_argument("--channel", help="speak in this channel instead of a DM")
    where.add_argument("--dm", action="store_true", help="a direct conversation (default)")
    chat.set_defaults(command=cmd_chat)

    proposals = commands.add_parser("proposals", help="list and decide pending proposals")
    sub = proposals.add_subparsers(title="proposals commands", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="list proposals, newest first")
    p.add_argument("--all", action="store_true", help="include decided ones")
    p.set_defaults(command=cmd_proposals_list)
    for name, approve in (("approve", True), ("reject", False)):
        p = sub.add_parser(name, help=f"{name} a pending proposal as an admin")
        p.add_argument(
            "proposal_id", type=int, help="the proposal's number, as `proposals list` shows it"
        )
        p.set_defaults(command=cmd_decide, approve=approve)


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"


async def cmd_chat(args: argparse.Namespace, settings: Settings) -> int:
    console = ConsoleAdapter(args.user or _login(), args.channel, bot_name=settings.bot.name)
    async with Bot(settings, [console]) as bot:
        await console.run(bot.dispatcher.wait_idle)
    return 0


async def cmd_proposals_list(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as notes:
        proposals = ProposalStore(notes)
        await proposals.expire_due()
        found = await proposals.list_recent(None if args.all else "pending")
    if not found:
        print("no proposals" if args.all else "no pending proposals")
    for p in found:
        what = p.payload.get("topic", "")
        where = p.payload.get("scope", "")
        print(
            f"#{p.id:<5} {p.status:<8} {p.kind:<12} {where} / {what}  by {p.requester}  "
            f"expires {p.expires_at:%Y-%m-%d %H:%M}Z" + (f"  ({p.outcome})" if p.outcome else "")
        )
    return 0


async def cmd_decide(args: argparse.Namespace, settings: Settings) -> int:
    """Decide a proposal as an admin, as a reaction would; the card and the waiting turn
    are finished by the daemon, which holds the platform connections."""
    async with open_store(settings) as notes:
        proposals = ProposalStore(notes)
        service = build_approvals(settings, proposals, {}, EventLog(notes.db, clock=notes.clock))
        proposal = await service.decide(args.proposal_id, approve=args.approve, by=cli_actor())
        print(await service.outcome_text(proposal))
    if DatabaseLock(settings.database.path).held_elsewhere():
        print("The running lorebot will update the card and continue any waiting turn.")
    else:
        print(
            "lorebot is not running: the card will be updated, and any waiting turn "
            "continued, when it next starts."
        )
    return 0
