"""Configuration: one frozen settings object read once at start and passed in.

Sources, highest priority first: environment variables `LOREBOT_…` (nested with `__`,
e.g. `LOREBOT_OLLAMA__MODEL`), a `.env` file in the working directory, then a TOML file:
`--config`, else `LOREBOT_CONFIG`, else the first of `$XDG_CONFIG_HOME/lorebot/config.toml`
and `/etc/lorebot/config.toml` that exists. This module and bot/config/paths.py (the paths
the defaults start from) are the only ones that read the environment for settings;
bot/config/snapshot.py digests the same inputs to know when its snapshot still holds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from bot.config.console_section import ConsoleSettings, is_loopback
from bot.config.model_sections import ModelSettings, OllamaSettings, OpenAISettings
from bot.config.paths import (
    DOTENV_FILE,
    ENV_PREFIX,
    absolute,
)
from bot.config.sections import (
    _SECRET_REF,
    BotSettings,
    DatabaseSettings,
    DiscordSettings,
    JobsSettings,
    McpSettings,
    MemorySettings,
    ObservabilitySettings,
    SkillsSettings,
    SlackSettings,
    resolve_secret,
)
from bot.errors import ConfigError
from memory.policy.conninfo import read_conninfo


@dataclass(frozen=True, slots=True)
class SystemdEnvironment:
    """What systemd tells a service through its environment."""

    notify_socket: str | None
    watchdog_usec: int | None


class SettingsConflict(ValueError):
    """Settings that do not go together: the one at `path` is `detail` because of those at
    `because`, and `fix` says what to do. The loader names where each of them was set."""

    def __init__(
        self,
        path: tuple[str, ...],
        detail: str,
        fix: str,
        *,
        because: tuple[tuple[str, ...], ...] = (),
    ) -> None:
        super().__init__(f"{'.'.join(path)} is {detail}: {fix} ({variable_name(path)})")
        self.path, self.detail, self.fix, self.because = path, detail, fix, because


def systemd_environment() -> SystemdEnvironment:
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    watchdog = int(usec) if usec.isdigit() and (not pid or pid == str(os.getpid())) else None
    return SystemdEnvironment(os.environ.get("NOTIFY_SOCKET") or None, watchdog)


def _secret_values(value: object) -> list[str]:
    """The values of every `SecretStr` in a settings model, at any depth, so a platform's
    new secret setting is scrubbed from logs without being listed anywhere."""
    if isinstance(value, SecretStr):
        return [value.get_secret_value()]
    if isinstance(value, BaseModel):
        return [
            s for name in type(value).model_fields for s in _secret_values(getattr(value, name))
        ]
    if isinstance(value, list | tuple):
        return [secret for item in value for secret in _secret_values(item)]
    return []


class Settings(BaseSettings):
    """Everything lorebot can be configured with; defaults run with no config at all."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_file=DOTENV_FILE,
        env_file_encoding="utf-8",
        # Other programs' keys in .env are theirs; lorebot's own typos are reported by
        # `unknown_variables` instead.
        dotenv_filtering="only_existing",
    )

    config: Path | None = Field(None, description="the TOML file these settings came from")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="DEBUG, INFO, WARNING or ERROR"
    )
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    bot: BotSettings = Field(default_factory=BotSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)

    @property
    def model_server(self) -> OllamaSettings | OpenAISettings:
        """The section of the backend `model.backend` picks."""
        return self.openai if self.model.backend == "openai" else self.ollama

    @model_validator(mode="after")
    def _openai_needs_a_model(self) -> Settings:
        if self.model.backend == "openai" and not self.openai.model:
            raise SettingsConflict(
                ("openai", "model"),
                'not set, but model.backend is "openai"',
                "name the model as the server's /v1/models lists it",
                because=(("model", "backend"),),
            )
        return self

    @model_validator(mode="after")
    def _open_console_needs_sign_in(self) -> Settings:
        console = self.console
        if console.enabled and not is_loopback(console.host) and not console.sign_in_method:
            raise SettingsConflict(
                ("console", "listen"),
                f"{console.host}, beyond this machine, but no way to sign in is set",
                "set console.password_hash or an OAuth app (console.slack_client_id and "
                "secret, or console.discord_client_id and secret), or listen on 127.0.0.1",
                because=(("console", "enabled"),),
            )
        return self

    def secrets(self) -> list[str]:
        """Every configured secret value, so logs can be scrubbed of them."""
        found = [value for value in _secret_values(self) if value]
        if self.database.url is not None:
            # The URL's passwords in every form libpq takes, as written and as decoded
            # (libpq never quotes one it read from PGPASSWORD or a password file).
            found += read_conninfo(self.database.url.get_secret_value()).secrets
        references = [*self.skills.script_env.values()]
        for server in self.mcp.servers:
            references += [*server.env.values(), *server.headers.values()]
        for value in references:
            if _SECRET_REF.match(value) and (resolved := _resolved_or_none(value)):
                found.append(resolved)
        return found

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The TOML file arrives as init values, so the environment overrides it.
        return _EnvSource(settings_cls), _DotEnvSource(settings_cls), init_settings

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_case_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("config")
    @classmethod
    def _absolute_config(cls, path: Path | None) -> Path | None:
        return None if path is None else absolute(path)


def _resolved_or_none(value: str) -> str | None:
    try:
        return resolve_secret(value)
    except ConfigError:
        return None


def variable_name(path: Sequence[str]) -> str:
    """The environment variable of a setting: `ollama.model` is `LOREBOT_OLLAMA__MODEL`."""
    return ENV_PREFIX + "__".join(path).upper()


def section_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model of a section field (e.g. `[ollama]`), else None."""
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def item_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model of a list of tables (e.g. `[[mcp.servers]]`), else None."""
    if get_origin(field.annotation) not in (tuple, list):
        return None
    item = get_args(field.annotation)[0]
    return item if isinstance(item, type) and issubclass(item, BaseModel) else None


def setting_fields(
    model: type[BaseModel] | None = None, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], FieldInfo]]:
    """Every setting and section as its path and field, in the order they are declared."""
    for name, field in (model or Settings).model_fields.items():
        path = (*prefix, name)
        yield path, field
        section = section_model(field)
        if section is not None:
            yield from setting_fields(section, path)


# --- Environment text for list settings --------------------------------------------


def _is_text_list(annotation: Any) -> bool:
    if get_origin(annotation) not in (tuple, list):
        return False
    items = [item for item in get_args(annotation) if item is not Ellipsis]
    return bool(items) and all(item in (str, Path) for item in items)


def _split_list(text: str) -> list[str]:
    """`a, b` as a list; also `[a, b]`, which is what systemd leaves of `["a", "b"]` in an
    EnvironmentFile once it has taken the quotes away."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    items = (item.strip().strip("\"'").strip() for item in text.split(","))
    return [item for item in items if item]


def _variable_of(field: FieldInfo) -> str:
    path = next((p for p, f in setting_fields() if f is field), None)
    return variable_name(path) if path else "a LOREBOT_ variable"


def _decode(field: FieldInfo | None, value: Any, origin: str) -> Any:
    """JSON, as pydantic-settings reads it; a list of text also takes `a,b,c`, and other
    text that is not JSON is one line naming the variable."""
    try:
        return json.loads(value)
    except ValueError as exc:
        if field is None or get_origin(field.annotation) in (UnionType, Union):
            raise  # pydantic-settings keeps the text as it is
        if _is_text_list(field.annotation):
            return _split_list(str(value))
        raise ConfigError(
            f"{_variable_of(field)} in {origin} is not valid JSON ({exc}): write it as JSON, "
            'e.g. \'["a", "b"]\' for a list or \'{"key": "value"}\' for a table'
        ) from None


class _EnvSource(EnvSettingsSource):
    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        return _decode(field, value, "the environment")


class _DotEnvSource(DotEnvSettingsSource):
    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        return _decode(field, value, str(DOTENV_FILE.absolute()))
