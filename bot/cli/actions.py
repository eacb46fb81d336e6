"""`lorebot actions …`: the audit of actions, and the tools allowed without a card."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from bot.cli.common import iso_z, open_stores, print_json
from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from memory.stores.actions import Action, Allowance


def add_parser(commands: Any) -> None:
    actions = commands.add_parser(
        "actions", help="list the actions lorebot ran or was asked to run, and allowances"
    )
    sub = actions.add_subparsers(title="actions commands", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="actions, newest first: who asked, who approved, outcome")
    p.add_argument("-n", type=int, default=50, help="how many (default 50)")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(command=cmd_list)
    p = sub.add_parser("allowances", help="tools an admin allowed without a card (♾️)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array, one object per allowance: id, tool, channel, granted_by, "
        "created_at",
    )
    p.set_defaults(command=cmd_allowances)
    p = sub.add_parser("revoke", help="revoke an allowance: the tool asks on a card again")
    p.add_argument("allowance_id", type=int, help="the ID `actions allowances` shows")
    p.set_defaults(command=cmd_revoke)


def _as_json(action: Action) -> dict[str, Any]:
    return {
        "id": action.id,
        "proposal_id": action.proposal_id,
        "tool": action.tool,
        "arguments": action.arguments,
        "requester": action.requester,
        "channel": action.channel_scope,
        "approval": action.approval,
        "decided_by": action.decided_by,
        "outcome": action.outcome,
        "output": action.output,
        "started_at": action.started_at.isoformat() if action.started_at else None,
        "duration_ms": action.duration_ms,
        "created_at": action.created_at.isoformat(),
    }


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    async with open_stores(settings) as stores:
        found = await stores.actions.fetch_recent(args.n)
    if args.json:
        print(json.dumps([_as_json(a) for a in found], ensure_ascii=False, indent=2))
        return 0
    if not found:
        print("no actions yet")
    for a in found:
        took = f" {a.duration_ms} ms" if a.duration_ms is not None else ""
        who = f"approved by {a.decided_by}" if a.decided_by else a.approval
        print(
            f"#{a.id:<5} {a.created_at:%Y-%m-%d %H:%M}Z  {a.tool}  {a.outcome}{took}  "
            f"asked by {a.requester} in {a.channel_scope or 'a DM'}  ({who})"
        )
        print(f"       arguments: {json.dumps(a.arguments, ensure_ascii=False, sort_keys=True)}")
    return 0


def _allowance_json(allowance: Allowance) -> dict[str, Any]:
    return {
        "id": allowance.id,
        "tool": allowance.tool,
        "channel": allowance.channel_scope,
        "granted_by": allowance.granted_by,
        "created_at": iso_z(allowance.created_at),
    }


async def cmd_allowances(args: argparse.Namespace, settings: Settings) -> int:
    async with open_stores(settings) as stores:
        found = await stores.actions.fetch_allowances()
    if args.json:
        print_json([_allowance_json(a) for a in found])
        return 0
    if not found:
        print("no allowances: every action that is not exempt asks on a card")
    for a in found:
        print(
            f"#{a.id:<5} {a.tool} in {a.channel_scope}, by {a.granted_by} "
            f"on {a.created_at:%Y-%m-%d %H:%M}Z"
        )
    return 0


async def cmd_revoke(args: argparse.Namespace, settings: Settings) -> int:
    async with open_stores(settings) as stores:
        revoked = await stores.actions.revoke(args.allowance_id)
    if not revoked:
        raise UserError(
            f"there is no allowance {args.allowance_id} (see `lorebot actions allowances`)"
        )
    print(f"revoked allowance {args.allowance_id}: that tool asks on a card again")
    return 0
