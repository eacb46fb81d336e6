"""`lorebot db copy --to postgresql://…`: move the SQLite database into PostgreSQL."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.settings import Settings


def add_parser(commands: Any) -> None:
    db = commands.add_parser("db", help="move the database to another engine")
    sub = db.add_subparsers(title="db commands", metavar="ACTION", required=True)
    p = sub.add_parser(
        "copy",
        help="copy the SQLite database (database.path) into an empty PostgreSQL database, "
        "with everything in it; vectors are made again there",
    )
    p.add_argument("--to", required=True, metavar="URL", help="postgresql://user@host/db")
    p.add_argument(
        "--force", action="store_true", help="replace what the target holds (it is emptied)"
    )
    p.set_defaults(command=cmd_copy)


async def cmd_copy(args: argparse.Namespace, settings: Settings) -> int:
    from bot.storage import copy_to_postgresql
    from memory import StoreError
    from memory.policy.conninfo import url_problem

    if (problem := url_problem(args.to)) is not None:
        raise UserError(f"--to takes {problem}")

    def progress(table: str, rows: int) -> None:
        print(f"  {table}: {rows:,} rows", file=sys.stderr, flush=True)

    try:
        source, target, copied = await copy_to_postgresql(
            settings, args.to, replace=args.force, progress=progress
        )
    except StoreError as exc:
        raise UserError(str(exc)) from None
    width = max(len(c.table) for c in copied)
    print(f"copied {source} to {target}:")
    for c in copied:
        mark = "✓" if c.source == c.target else "✗"
        print(
            f"  {mark} {c.table:<{width}}  {c.source:>9,} in SQLite  {c.target:>9,} in PostgreSQL"
        )
    if any(c.source != c.target for c in copied):
        raise UserError("the counts differ: the copy is incomplete")
    print(
        "every table holds as many rows as in SQLite; vectors are made again once lorebot "
        "starts on it. To use it, set LOREBOT_DATABASE__URL (or database.url) to it."
    )
    return 0
