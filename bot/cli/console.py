"""`lorebot console …`: a one-time sign-in link for the web console, and the hash of its
admin password."""

from __future__ import annotations

import argparse
import getpass
import secrets
import sys
from typing import TYPE_CHECKING, Any

from bot.cli.common import open_stores
from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.settings import Settings


def add_parser(commands: Any) -> None:
    console = commands.add_parser("console", help="sign-in links and the password of the console")
    sub = console.add_subparsers(title="console commands", metavar="ACTION", required=True)
    p = sub.add_parser(
        "link",
        help="print a sign-in link for one person that works once, within 10 minutes",
    )
    p.add_argument(
        "--user",
        metavar="PLATFORM/ID",
        help="whom it signs in, e.g. slack/U024BE7LH (default: the first of bot.admins)",
    )
    p.set_defaults(command=cmd_link)
    p = sub.add_parser(
        "hash-password",
        help="read a password and print its argon2 hash, for console.password_hash",
    )
    p.set_defaults(standalone=cmd_hash_password)


def link_user(settings: Settings, given: str | None) -> str:
    """The user scope a link signs in: `--user` (PLATFORM/ID or a user scope), else the
    first admin."""
    from memory import InvalidInput
    from memory.types import Scope, ScopeKind

    if given is None:
        if not settings.bot.admins:
            raise UserError("bot.admins is empty: name the person with --user PLATFORM/ID")
        return settings.bot.admins[0]
    text = given if given.startswith("user:") else f"user:{given}"
    try:
        scope = Scope.parse(text)
    except InvalidInput:
        raise UserError(f"--user {given[:80]!r} is not PLATFORM/ID, e.g. slack/U024BE7LH") from None
    if scope.kind is not ScopeKind.USER:
        raise UserError(f"--user {given[:80]!r} is not a person")
    return str(scope)


async def cmd_link(args: argparse.Namespace, settings: Settings) -> int:
    user = link_user(settings, args.user)
    if not settings.console.enabled:
        print(
            "note: console.enabled is off: the link works once the console is on", file=sys.stderr
        )
    token = secrets.token_urlsafe(32)
    async with open_stores(settings) as stores:
        expires = await stores.console.create_link(token, user)
    print(f"{settings.console.public_url}/signin/link/{token}")
    print(f"signs in {user} once, until {expires:%Y-%m-%d %H:%M} UTC", file=sys.stderr)
    return 0


def cmd_hash_password(args: argparse.Namespace) -> int:
    from argon2 import PasswordHasher

    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise UserError("the two passwords differ: nothing was printed")
    else:
        password = sys.stdin.readline().rstrip("\n")
    if len(password) < 12:
        raise UserError("a console password has 12 characters at least")
    print(PasswordHasher().hash(password))
    return 0
