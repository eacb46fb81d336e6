"""`lorebot config show` (each setting, its value and where it came from) and `lorebot
config init` (every setting with its default, written from the settings model itself)."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from bot.config import (
    SYSTEM_CONFIG,
    Settings,
    Source,
    item_model,
    read_inputs,
    section_model,
    setting_fields,
    user_config_path,
    variable_name,
)
from bot.errors import UserError

MASK = "********"
# Maps whose values may be written as secrets rather than as `${NAME}` references.
SECRET_MAPS = frozenset({"env", "headers", "script_env"})
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
WIDTH = 88

TOML_HEADER = """\
# lorebot configuration: every setting with its default, commented out. Remove the "# "
# before a setting to change it. lorebot reads this file from --config FILE, else from
# $LOREBOT_CONFIG, else from ~/.config/lorebot/config.toml, then /etc/lorebot/config.toml.
# An environment variable overrides a setting here: section.key is LOREBOT_SECTION__KEY.
# Keep tokens out of this file: give them as environment variables (or in the service's
# EnvironmentFile) instead.
"""
ENV_HEADER = """\
# lorebot settings as environment variables, every one with its default, commented out.
# Lists take JSON or comma-separated text. Keep this file readable by its owner only.
"""


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


def shown_settings(settings: Settings) -> dict[str, Any]:
    """The settings as JSON values by dotted key, secrets masked."""
    dumped = _masked(settings.model_dump(mode="json"), "")
    shown: dict[str, Any] = {}
    for path, field in setting_fields():
        if section_model(field) is not None or path == ("config",):
            continue
        value: Any = dumped
        for key in path:
            value = value[key]
        shown[".".join(path)] = value
    return shown


def _masked(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if key in SECRET_MAPS:
            return {k: v if _REFERENCE.match(str(v)) else MASK for k, v in value.items()}
        return {k: _masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(item, key) for item in value]
    if value == "**********":  # pydantic's JSON form of a SecretStr
        return MASK
    return value


def _source_fields(source: Source) -> dict[str, str | None]:
    file = source.file if source.origin == "file" else None
    return {"source": source.origin, "variable": source.variable,
            "file": str(file) if file else None}  # fmt: skip


async def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    inputs = read_inputs(settings.config)
    shown = shown_settings(settings)
    sources = {key: inputs.source_of(key.split(".")) for key in shown}
    if args.json:
        print(json.dumps({
            "config_file": str(inputs.config_file) if inputs.config_file else None,
            "dotenv_file": str(inputs.dotenv_file) if inputs.dotenv else None,
            "settings": {key: {"value": value, **_source_fields(sources[key])}
                         for key, value in shown.items()},
        }, indent=2, ensure_ascii=False))  # fmt: skip
        return 0
    looked = f"none (looked for {user_config_path()} and {SYSTEM_CONFIG})"
    print(f"config file: {inputs.config_file or looked}")
    print(f".env: {inputs.dotenv_file}" + ("" if inputs.dotenv else " (no LOREBOT_ keys)"))
    for key, value in shown.items():
        text = "(not set)" if value is None else json.dumps(value, ensure_ascii=False)
        print(f"{key} = {text}  ({_origin(sources[key])})")
    return 0


def _origin(source: Source) -> str:
    if source.origin in ("environment", ".env"):
        return f"{source.origin}: {source.variable}"
    return source.origin


# --- config init -------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
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


def render_toml() -> str:
    """A config file that lists every setting, commented out, with its description."""
    return TOML_HEADER + "\n" + "\n".join(_toml_table(Settings, ())) + "\n"


def _toml_table(model: type[BaseModel], path: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    if path:
        lines += ["", *_comment(_doc(model), "# "), f"[{'.'.join(path)}]"]
    fields = [(n, f) for n, f in model.model_fields.items() if (*path, n) != ("config",)]
    for name, field in fields:
        if section_model(field) is None and item_model(field) is None:
            lines += _comment(_describe(field), "# ")
            lines.append(f"# {name} =" + _toml_value(field))
    for name, field in fields:
        item = item_model(field)
        if item is not None:
            lines += _toml_items((*path, name), field, item)
    for name, field in fields:
        section = section_model(field)
        if section is not None:
            lines += _toml_table(section, (*path, name))
    return lines


def _toml_items(path: tuple[str, ...], field: FieldInfo, item: type[BaseModel]) -> list[str]:
    """A commented example table for a list of tables, such as `[[mcp.servers]]`."""
    what = field.description or "one table each"
    lines = _comment(f"{what}; none by default. Each one is a table:", "# ")
    lines.append(f"# [[{'.'.join(path)}]]")
    for name, sub in item.model_fields.items():
        note = _describe(sub)
        required = "required" if sub.is_required() else ""
        remark = "; ".join(part for part in (required, note) if part)
        lines.append(f"#   {name} =" + _toml_value(sub) + (f"  # {remark}" if remark else ""))
    return lines


def _toml_value(field: FieldInfo) -> str:
    if field.is_required():
        return ""
    value = field.get_default(call_default_factory=True)
    return "" if value is None else " " + _toml(value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{" + (f" {pairs} " if pairs else "") + "}"
    raise TypeError(f"no TOML form for {value!r}")


def render_env() -> str:
    """Every setting as a commented `LOREBOT_…=default` line, for `.env` or a systemd
    EnvironmentFile. Defaults that depend on where lorebot runs are left empty."""
    return ENV_HEADER + "\n" + "\n".join(_env_lines()) + "\n"


def _env_lines() -> list[str]:
    lines: list[str] = []
    for path, field in setting_fields():
        if path == ("config",):
            continue
        section = section_model(field)
        if section is not None:
            title = f"[{'.'.join(path)}]" + (f" {_doc(section)}" if _doc(section) else "")
            lines += ["", *_comment(title, "# ")]
            continue
        lines += _comment(_describe(field), "# ")
        item = item_model(field)
        if item is not None:
            keys = ", ".join(f'"{name}": …' for name in item.model_fields)
            lines += _comment(f"as JSON, one table each: [{{{keys}}}]", "# ")
        lines.append(f"#{variable_name(path)}={_env_value(field)}")
    return lines


def _env_value(field: FieldInfo) -> str:
    if field.is_required():
        return ""
    value = field.get_default(call_default_factory=True)
    if value is None or field.default_factory is not None and isinstance(value, str | Path):
        return ""  # computed where lorebot runs: its description says how
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif item_model(field) is None and isinstance(value, tuple | list):
        text = ",".join(str(v) for v in value)
    elif isinstance(value, tuple | list | dict):
        text = json.dumps(value, default=str, separators=(",", ":"))
    else:
        text = str(value)
    # Single quotes keep spaces and JSON's double quotes as they are, for systemd and .env.
    return f"'{text}'" if re.search(r"[\s\"'#\\$`{}\[\]]", text) else text


# --- Descriptions ------------------------------------------------------------------


def _doc(model: type[BaseModel]) -> str:
    doc = model.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(doc).split()) if doc else ""


def _describe(field: FieldInfo) -> str:
    """The field's description, with its choices and whether it is a secret."""
    parts = [field.description or ""]
    annotation = field.annotation
    choices = _literal_choices(annotation)
    if choices and not all(choice in parts[0] for choice in choices):
        parts.append("one of " + ", ".join(choices))
    if SecretStr in (annotation, *get_args(annotation)):
        parts.append("a secret: better given in the environment")
    return "; ".join(part for part in parts if part)


def _literal_choices(annotation: Any) -> list[str]:
    for candidate in (annotation, *get_args(annotation)):
        if get_origin(candidate) is Literal:
            return [str(choice) for choice in get_args(candidate)]
    return []


def _comment(text: str, prefix: str) -> list[str]:
    width = WIDTH - len(prefix)
    return [prefix + line for line in textwrap.wrap(text, width)] if text else []
