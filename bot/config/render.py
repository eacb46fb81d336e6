"""The settings model rendered for people: `config show`'s values with secrets masked,
and `config init`'s commented TOML and environment files (`bot.config.reference` makes
the documentation's table from the same descriptions)."""

from __future__ import annotations

import inspect
import json
import re
import textwrap
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from bot.config.settings import Settings, item_model, section_model, setting_fields, variable_name

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


def render_toml() -> str:
    """A config file that lists every setting, commented out, with its description."""
    return TOML_HEADER + "\n" + "\n".join(_toml_table(Settings, ())) + "\n"


def _toml_table(model: type[BaseModel], path: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    if path:
        lines += ["", *_comment(model_doc(model), "# "), f"[{'.'.join(path)}]"]
    fields = [(n, f) for n, f in model.model_fields.items() if (*path, n) != ("config",)]
    for name, field in fields:
        if section_model(field) is None and item_model(field) is None:
            lines += _comment(describe(field), "# ")
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
        note = describe(sub)
        required = "required" if sub.is_required() else ""
        remark = "; ".join(part for part in (required, note) if part)
        lines.append(f"#   {name} =" + _toml_value(sub) + (f"  # {remark}" if remark else ""))
    return lines


def _toml_value(field: FieldInfo) -> str:
    if field.is_required():
        return ""
    value = field.get_default(call_default_factory=True)
    return "" if value is None else " " + toml_text(value)


def toml_text(value: Any) -> str:
    """A default as it is written in TOML: `"qwen3:8b"`, `5000`, `[]`, `true`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(toml_text(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{json.dumps(str(k))} = {toml_text(v)}" for k, v in value.items())
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
            doc = model_doc(section)
            title = f"[{'.'.join(path)}]" + (f" {doc}" if doc else "")
            lines += ["", *_comment(title, "# ")]
            continue
        lines += _comment(describe(field), "# ")
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


def model_doc(model: type[BaseModel]) -> str:
    """A section model's docstring on one line, or "" when it has none."""
    doc = model.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(doc).split()) if doc else ""


def describe(field: FieldInfo) -> str:
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
