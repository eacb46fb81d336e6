"""The configuration reference of the documentation, `docs/configuration.md`: every
setting as a Markdown table row (TOML key, environment variable, default, meaning), made
from the settings models as `config init` is, so the page cannot miss or misstate one.

Regenerate the page with `python -m bot.config.reference > docs/configuration.md`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from bot.config.render import describe, model_doc, toml_text
from bot.config.settings import item_model, section_model, setting_fields, variable_name

COMMAND = "python -m bot.config.reference > docs/configuration.md"
# The home folder while computed defaults are made, written `~` on the page.
_HOME = "/home/lorebot-reference"

# The documentation page that tells what each section's settings are for.
SECTION_PAGES = {
    "database": ("Where lorebot keeps its files", "install.md#where-lorebot-keeps-its-files"),
    "memory": ("Memory and scopes", "memory.md"),
    "ollama": ("The model", "install.md#the-model"),
    "bot": ("Talking to lorebot", "using.md"),
    "slack": ("Slack", "slack.md"),
    "discord": ("Discord", "discord.md"),
    "skills": ("Skills", "skills.md"),
    "jobs": ("Scheduled jobs", "jobs.md"),
    "mcp": ("Actions", "actions.md"),
    "observability": ("Operations", "operations.md"),
}

INTRO = f"""\
# Configuration reference

<!-- Generated from the settings models: do not edit this page, change the settings'
descriptions in bot/config/sections.py and run `{COMMAND}`. -->

Every setting lorebot reads, made from the settings models themselves, as `lorebot config
init` is, so this page lists every one. Where settings come from and in which order (the
environment, `.env`, the config file), and how a mistake in them is reported, is in
[Configuration](install.md#configuration); `lorebot config show` prints the value of each
one in effect and where it came from.

A setting `section.key` is the line `key = …` under `[section]` in the TOML config file,
and the environment variable `LOREBOT_SECTION__KEY`. A list given as a variable takes JSON
(`["user:slack/U1", "user:slack/U2"]`) or comma-separated text
(`user:slack/U1,user:slack/U2`); tables and lists of tables take JSON. With no
configuration at all, lorebot runs with the defaults below. A default that depends on
where lorebot runs is shown as it is for a user's shell outside systemd, `~` standing for
the home folder; under systemd the database and `skills.user_root` are in the service's
state directory ([Running as a systemd service](operations.md#running-as-a-systemd-service)).
Secrets (the tokens and the signing secret) have no default; give them in the environment
or an environment file, never in the config file."""


def render_reference() -> str:
    """The whole page: the introduction, then one table per section."""
    lines = [INTRO]
    top = [(path, field) for path, field in setting_fields() if len(path) == 1]
    plain = [(path, f) for path, f in top if section_model(f) is None and path != ("config",)]
    lines += ["", "## Top level", "", *_table(plain)]
    for path, field in top:
        section = section_model(field)
        if section is not None:
            lines += ["", *_section(path, section)]
    return "\n".join(lines) + "\n"


def _section(path: tuple[str, ...], model: type[BaseModel]) -> list[str]:
    name = ".".join(path)
    lines = [f"## `[{name}]`", ""]
    doc = model_doc(model)
    title, page = SECTION_PAGES.get(name, ("", ""))
    more = f"More in [{title}]({page})." if page else ""
    if doc or more:
        lines += [" ".join(part for part in (doc, more) if part), ""]
    fields = [(p, f) for p, f in setting_fields(model, path) if len(p) == len(path) + 1]
    lines += _table(fields)
    for sub_path, field in fields:
        item = item_model(field)
        if item is not None:
            lines += ["", *_items(sub_path, item)]
    return lines


def _table(fields: Sequence[tuple[tuple[str, ...], FieldInfo]]) -> list[str]:
    rows = ["| key | environment variable | default | meaning |", "| --- | --- | --- | --- |"]
    for path, field in fields:
        key, variable = ".".join(path), variable_name(path)
        rows.append(f"| `{key}` | `{variable}` | {_default(field)} | {_cell(describe(field))} |")
    return rows


def _items(path: tuple[str, ...], item: type[BaseModel]) -> list[str]:
    """The keys of one table of a list of tables, such as `[[mcp.servers]]`."""
    name = ".".join(path)
    what = (
        f"Each table of `{name}` takes these keys; as a variable, `{variable_name(path)}` "
        "holds the whole list as JSON."
    )
    lines = [f"### `[[{name}]]`", "", " ".join(p for p in (model_doc(item), what) if p), ""]
    lines += ["| key | default | meaning |", "| --- | --- | --- |"]
    for key, sub in item.model_fields.items():
        lines.append(f"| `{key}` | {_default(sub)} | {_cell(describe(sub))} |")
    return lines


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is None:
        value = field.default
    else:
        with _ordinary_environment():
            value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, str | Path) and str(value).startswith(_HOME):
        value = "~" + str(value).removeprefix(_HOME)
    return f"`{toml_text(value)}`"


@contextmanager
def _ordinary_environment() -> Iterator[None]:
    """Only a stand-in `HOME` in the environment while a computed default is made, so it
    comes out as for any user's shell outside systemd, whoever generates the page."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ["HOME"] = _HOME
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _cell(text: str) -> str:
    """Text for one table cell: a `|` would end the cell."""
    return text.replace("|", "\\|")


def main() -> int:
    sys.stdout.write(render_reference())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
