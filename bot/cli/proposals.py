"""`lorebot proposals …`: list proposals, and approve or reject one as an admin."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bot.cli.common import cli_actor, iso_z, open_stores, print_json

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from memory.stores.proposals import Proposal


def add_parser(commands: Any) -> None:
    proposals = commands.add_parser("proposals", help="list and decide pending proposals")
    sub = proposals.add_subparsers(title="proposals commands", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="list proposals, newest first")
    p.add_argument("--all", action="store_true", help="include decided ones")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array, one object per proposal: id, status, kind, scope, topic, "
        "requester, created_at, expires_at, decided_by, decided_at, outcome, card (platform, "
        "channel_id, thread_id, message_id; null without a card)",
    )
    p.set_defaults(command=cmd_proposals_list)
    for name, approve in (("approve", True), ("reject", False)):
        p = sub.add_parser(name, help=f"{name} a pending proposal as an admin")
        p.add_argument(
            "proposal_id", type=int, help="the proposal's number, as `proposals list` shows it"
        )
        p.set_defaults(command=cmd_decide, approve=approve)


def _card_json(proposal: Proposal) -> dict[str, Any] | None:
    """Where the card was posted: cards go to the proposal's own conversation."""
    if proposal.card_message_id is None:
        return None
    return {
        "platform": proposal.platform,
        "channel_id": proposal.conversation.get("channel_id"),
        "thread_id": proposal.conversation.get("thread_id"),
        "message_id": proposal.card_message_id,
    }


def _proposal_json(proposal: Proposal) -> dict[str, Any]:
    return {
        "id": proposal.id,
        "status": proposal.status,
        "kind": proposal.kind,
        "scope": proposal.payload.get("scope"),
        "topic": proposal.payload.get("topic"),
        "requester": proposal.requester,
        "created_at": iso_z(proposal.created_at),
        "expires_at": iso_z(proposal.expires_at),
        "decided_by": proposal.decided_by,
        "decided_at": iso_z(proposal.decided_at),
        "outcome": proposal.outcome,
        "card": _card_json(proposal),
    }


async def cmd_proposals_list(args: argparse.Namespace, settings: Settings) -> int:
    async with open_stores(settings) as stores:
        await stores.proposals.expire_due()
        found = await stores.proposals.fetch_recent(None if args.all else "pending")
    if args.json:
        print_json([_proposal_json(p) for p in found])
        return 0
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
    from bot.approvals.service import build_approvals  # with its metrics: `list` needs neither
    from bot.cli.running import daemon_running

    async with open_stores(settings) as stores:
        service = build_approvals(settings, stores, {})
        proposal = await service.decide(args.proposal_id, approve=args.approve, by=cli_actor())
        print(await service.outcome_text(proposal))
        running = await daemon_running(settings, stores)
    if running:
        print("The running lorebot will update the card and continue any waiting turn.")
    else:
        print(
            "lorebot is not running: the card will be updated, and any waiting turn "
            "continued, when it next starts."
        )
    return 0
