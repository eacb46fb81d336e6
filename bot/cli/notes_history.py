"""`lorebot notes history`, `notes revert` and `notes undo`: change sets, newest first,
and reverting them. An import is one change of many notes, shown and reverted as one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bot.cli.common import cli_actor, iso_z, open_store, print_json

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from memory import Change


def describe(change: Change) -> str:
    """What a change touched: `SCOPE / TOPIC`, or for a change of many notes `import #N:
    COUNT notes` and the scope it was read in."""
    if change.topic is not None:
        return f"{change.scope} / {change.topic}"
    what = f"import #{change.id}: " if change.action == "import" else ""
    where = "" if change.scope is None else f" in {change.scope}"
    return f"{what}{change.notes:,} notes{where}"


def _change_json(change: Change) -> dict[str, Any]:
    before, after = change.before or {}, change.after or {}
    return {
        "id": change.id,
        "scope": None if change.scope is None else str(change.scope),
        "topic": change.topic,
        "action": change.action,
        "notes": change.notes,
        "by": change.actor,
        "at": iso_z(change.created_at),
        "reason": change.reason,
        "proposal_id": change.proposal_id,
        "reverted_by": change.reverted_by,
        "summary_before": before.get("summary"),
        "summary_after": after.get("summary"),
    }


async def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:
        changes = await store.fetch_history(args.scope, args.topic, limit=args.n)
    if args.json:
        print_json([_change_json(c) for c in changes])
        return 0
    if not changes:
        print("no changes")
    for change in changes:
        reverted = f"  (reverted by {change.reverted_by})" if change.reverted_by else ""
        why = f"  — {change.reason}" if change.reason else ""
        print(
            f"{change.id:>6}  {change.created_at:%Y-%m-%d %H:%M}Z  {change.action:<7} "
            f"{describe(change)}  by {change.actor}{why}{reverted}"
        )
    return 0


async def cmd_revert(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:
        change = await store.revert(args.change_id, actor=cli_actor())
        target = await store.fetch_change(args.change_id)
    if change.notes is None:
        state = "removed" if change.after is None else "restored"
        print(f"{state} {change.scope} / {change.topic} (change {change.id})")
        return 0
    print(f"reverted change {target.id}: {change.notes:,} notes as before it (change {change.id})")
    left = (target.notes or 0) - change.notes
    if left:
        print(f"left {left:,} of its notes as later changes made them")
    return 0


async def cmd_undo(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:
        change = await store.undo(cli_actor())
    print(f"undid {change.reason.removeprefix('undo of ')}: {describe(change)}")
    return 0
