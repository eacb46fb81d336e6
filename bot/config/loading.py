"""Reading the settings: the config file, lorebot's environment variables and `.env`,
where each value came from, variables that name no setting, and every problem said in one
line naming the setting and where it was set."""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_origin

from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    ValidationError,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    SettingsError,
)

from bot.config.paths import (
    DOTENV_FILE,
    ENV_PREFIX,
    find_config_file,
)
from bot.config.settings import (
    Settings,
    SettingsConflict,
    item_model,
    section_model,
    setting_fields,
    variable_name,
)
from bot.errors import ConfigError


def load_settings(config_file: Path | None = None) -> Settings:
    """Read the settings once; every problem becomes one line of one `ConfigError`."""
    inputs = read_inputs(config_file)
    problems = unknown_variables(inputs)
    values: dict[str, Any] = dict(inputs.file_values)
    if inputs.config_file is not None:
        values["config"] = inputs.config_file
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        problems += describe_errors(exc, inputs)
    except SettingsError as exc:
        cause = f": {exc.__cause__}" if exc.__cause__ else ""
        problems.append(f"{exc}{cause}")
    if problems:
        raise ConfigError("\n".join(problems))
    # The file actually read, even when LOREBOT_CONFIG names another beside --config.
    return settings.model_copy(update={"config": inputs.config_file})


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


# --- Where each setting comes from, and the names that exist ------------------------


Origin = Literal["default", "file", "environment", ".env"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where one setting's value came from."""

    origin: Origin
    variable: str | None = None
    file: Path | None = None

    def __str__(self) -> str:
        if self.origin == "environment":
            return f"{self.variable} in the environment"
        if self.origin == ".env":
            return f"{self.variable} in {self.file}"
        return str(self.file) if self.origin == "file" else "default"


@dataclass(frozen=True, slots=True)
class SettingsInputs:
    """What the settings are read from: the config file's values and lorebot's variables
    of the environment and of `.env` (names in upper case)."""

    config_file: Path | None
    file_values: Mapping[str, Any]
    environ: Mapping[str, str]
    dotenv_file: Path
    dotenv: Mapping[str, str]

    def source_of(self, path: Sequence[str | int]) -> Source:
        """The source that gives the setting at `path` (as in a validation error's loc)."""
        keys: list[str] = []
        for part in path:  # a list item is set with its whole list
            if not isinstance(part, str):
                break
            keys.append(part)
        variables: list[tuple[Origin, Mapping[str, str], Path | None]] = [
            ("environment", self.environ, None),
            (".env", self.dotenv, self.dotenv_file),
        ]
        for origin, names, file in variables:
            variable = _variable_for(keys, names)
            if variable is not None:
                return Source(origin, variable, file)
        node: Any = self.file_values
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return Source("default")
            node = node[key]
        return Source("file", file=self.config_file)


def read_inputs(config_file: Path | None = None) -> SettingsInputs:
    """Find the config file and read it, lorebot's environment variables and `.env`."""
    path = find_config_file(config_file)
    environ = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)}
    dotenv_file = DOTENV_FILE.absolute()
    dotenv: dict[str, str] = {}
    if dotenv_file.is_file():
        found = dotenv_values(dotenv_file, encoding="utf-8").items()
        dotenv = {k.upper(): v or "" for k, v in found if k.upper().startswith(ENV_PREFIX)}
    values = _read_toml(path) if path is not None else {}
    return SettingsInputs(path, values, environ, dotenv_file, dotenv)


def _variable_for(keys: Sequence[str], variables: Mapping[str, str]) -> str | None:
    """The variable that sets `keys`: its own, one inside it (a table's key), or that of
    a table around it (given whole, as JSON)."""
    if not keys:
        return None
    name = variable_name(keys)
    inside = sorted(v for v in variables if v.startswith(name + "__"))
    if name in variables or inside:
        return name if name in variables else inside[0]
    return next(
        (
            variable_name(keys[:n])
            for n in range(len(keys) - 1, 0, -1)
            if variable_name(keys[:n]) in variables
        ),
        None,
    )


def _dotted_names() -> list[str]:
    names = []
    for path, field in setting_fields():
        names.append(".".join(path))
        item = item_model(field)
        if item is not None:
            names += [".".join((*path, name)) for name in item.model_fields]
    return names


def unknown_variables(inputs: SettingsInputs) -> list[str]:
    """One line for each `LOREBOT_…` variable that names no setting, with the nearest."""
    fields = list(setting_fields())
    names = [variable_name(path) for path, _ in fields]
    open_prefixes = tuple(
        variable_name(path) + "__" for path, f in fields if get_origin(f.annotation) is dict
    )
    problems = []
    for origin, variables in (
        ("the environment", inputs.environ),
        (str(inputs.dotenv_file), inputs.dotenv),
    ):
        for name in sorted(variables):
            if name in names or name.startswith(open_prefixes):
                continue
            problems.append(f"{name} in {origin} is not a lorebot setting: {_nearest(name, names)}")
    return problems


def _nearest(name: str, names: list[str]) -> str:
    match = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if match:
        return f"did you mean {match[0]}?"
    return "remove it (`lorebot config init -` prints every setting)"


def _field_at(path: Sequence[str | int]) -> FieldInfo | None:
    model: type[BaseModel] | None = Settings
    field = None
    for part in path:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        model = section_model(field) or item_model(field)
    return field


def describe_errors(exc: ValidationError, inputs: SettingsInputs) -> list[str]:
    """One line per invalid value: the setting, where it was set, and what it should be."""
    lines = []
    for error in exc.errors():
        loc = error["loc"]
        key = ".".join(str(part) for part in loc)
        source = inputs.source_of(loc)
        if error["type"] == "extra_forbidden":
            dotted = ".".join(str(p) for p in loc if isinstance(p, str))
            lines.append(
                f"{key} in {source} is not a lorebot setting: {_nearest(dotted, _dotted_names())}"
            )
            continue
        conflict = error.get("ctx", {}).get("error")
        if isinstance(conflict, SettingsConflict):  # raised for the whole settings
            lines.append(_conflict_line(conflict, inputs))
            continue
        message = error["msg"].removeprefix("Value error, ")
        field = _field_at(loc)
        if error["type"] == "string_pattern_mismatch" and field and field.description:
            message = f"should be {field.description}, not {error['input']!r}"
        keys = [p for p in loc if isinstance(p, str)]
        where = f"or {variable_name(keys)}" if source.origin == "default" else str(source)
        lines.append(f"{key} ({where}): {message}")
    return lines


def _where(path: Sequence[str], inputs: SettingsInputs) -> str:
    """Where a setting was set, or the variable that would set it."""
    source = inputs.source_of(path)
    return f"or {variable_name(path)}" if source.origin == "default" else str(source)


def _conflict_line(conflict: SettingsConflict, inputs: SettingsInputs) -> str:
    """Settings that do not go together, each named with where it was set."""
    causes = "; ".join(_where(path, inputs) for path in conflict.because)
    because = f" ({causes})" if causes else ""
    where = _where(conflict.path, inputs)
    return f"{'.'.join(conflict.path)} ({where}): {conflict.detail}{because}: {conflict.fix}"
