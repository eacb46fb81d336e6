"""`lorebot config show` (each setting, its value and where it came from) and `lorebot
config init` (every setting with its default, written from the settings model itself)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.loading import SettingsInputs, Source
    from bot.config.settings import Settings


def add_parser(commands: Any) -> None:
    config = commands.add_parser("config", help="show the settings in effect, or write a file")
    sub = config.add_subparsers(title="config commands", metavar="ACTION", required=True)
    p = sub.add_parser(
        "show", help="every setting, its value and where it came from (secrets masked)"
    )
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(command=cmd_show)
    p = sub.add_parser(
        "init",
        help="write a config file with every setting and its default, commented out",
        description="Write a commented config.toml (or with --env an environment file) "
        "that lists every setting with its description and default.",
    )
    p.add_argument(
        "path",
        nargs="?",
        type=Path,
        metavar="PATH",
        help="where to write it, '-' for standard output (default: "
        "~/.config/lorebot/config.toml, or ./.env with --env)",
    )
    p.add_argument("--env", action="store_true", help="LOREBOT_… variables instead of TOML")
    p.add_argument("--force", action="store_true", help="overwrite a file that exists")
    p.set_defaults(standalone=cmd_init)


# --- config show -------------------------------------------------------------------


def _source_fields(source: Source) -> dict[str, str | None]:
    file = source.file if source.origin == "file" else None
    return {
        "source": source.origin,
        "variable": source.variable,
        "file": str(file) if file else None,
    }


async def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from bot.config.loading import read_inputs
    from bot.config.paths import SYSTEM_CONFIG, user_config_path
    from bot.config.render import shown_settings

    inputs = read_inputs(settings.config)
    shown = shown_settings(settings)
    sources = {key: inputs.source_of(key.split(".")) for key in shown}
    if args.json:
        print(
            json.dumps(
                {
                    "config_file": str(inputs.config_file) if inputs.config_file else None,
                    "dotenv_file": str(inputs.dotenv_file) if inputs.dotenv else None,
                    "settings": {
                        key: {"value": value, **_source_fields(sources[key])}
                        for key, value in shown.items()
                    },
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    looked = f"none (looked for {user_config_path()} and {SYSTEM_CONFIG})"
    print(f"config file: {inputs.config_file or looked}")
    print(f".env: {_dotenv(inputs)}")
    for key, value in shown.items():
        text = "(not set)" if value is None else json.dumps(value, ensure_ascii=False)
        print(f"{key} = {text}  ({_origin(sources[key])})")
    return 0


def _dotenv(inputs: SettingsInputs) -> str:
    """The `.env` file as `config show` names it: whether there is one, and whether it
    gives lorebot anything."""
    path = inputs.dotenv_file
    if not path.exists():
        return f"none ({path} does not exist)"
    if not path.is_file():
        return f"none ({path} is not a file)"
    return str(path) + ("" if inputs.dotenv else " (no LOREBOT_ keys)")


def _origin(source: Source) -> str:
    if source.origin in ("environment", ".env"):
        return f"{source.origin}: {source.variable}"
    return source.origin


# --- config init -------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    from bot.config.paths import SYSTEM_CONFIG, user_config_path
    from bot.config.render import render_env, render_toml

    text = render_env() if args.env else render_toml()
    if args.path == Path("-"):
        sys.stdout.write(text)
        return 0
    default = Path(".env") if args.env else user_config_path()
    path = (args.path or default).expanduser().absolute()
    if path.exists() and not args.force:
        raise UserError(f"{path} exists: add --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    # An environment file is where tokens go: only its owner may read it.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    with os.fdopen(os.open(path, flags, 0o600 if args.env else 0o644), "w") as handle:
        handle.write(text)
    print(f"wrote {path}: every setting with its default, commented out")
    if not args.env and path not in (user_config_path(), SYSTEM_CONFIG):
        print(f"lorebot reads it with --config {path} or LOREBOT_CONFIG={path}")
    return 0
