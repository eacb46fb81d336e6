"""Configuration: one frozen settings object read once at start and passed in.

Sources, highest priority first: environment variables `LOREBOT_…` (nested with `__`,
e.g. `LOREBOT_OLLAMA__MODEL`), a `.env` file in the working directory, then a TOML file:
`--config`, else `LOREBOT_CONFIG`, else the first of `$XDG_CONFIG_HOME/lorebot/config.toml`
and `/etc/lorebot/config.toml` that exists. This module and bot/config/paths.py (the paths
the defaults start from) are the only ones that read the environment for settings;
bot/config/snapshot.py digests the same inputs to know when its snapshot still holds.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from zoneinfo import ZoneInfo

from dotenv import dotenv_values
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
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
    SettingsError,
)

from bot.config.paths import (
    DOTENV_FILE,
    ENV_PREFIX,
    absolute,
    default_database_path,
    find_config_file,
    home,
    state_directory,
    xdg_dir,
)
from bot.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatabaseSettings(_Section):
    path: Path = Field(
        default_factory=default_database_path,
        description="the SQLite database; by default $STATE_DIRECTORY/lorebot.db under "
        "systemd, else $XDG_DATA_HOME/lorebot/lorebot.db (~/.local/share/lorebot/lorebot.db)",
    )
    busy_timeout_ms: int = Field(5000, ge=0, description="how long to wait for a lock")

    @field_validator("path")
    @classmethod
    def _absolute_path(cls, path: Path) -> Path:
        return absolute(path)


class MemorySettings(_Section):
    max_note_bytes: int = Field(4096, ge=64, le=1_000_000, description="largest note body")
    index_max_lines: int = Field(40, ge=1, description="lines per scope index")
    index_max_bytes: int = Field(2048, ge=64, description="bytes per scope index")
    turn_max_bytes: int = Field(6144, ge=64, description="bytes of all indexes in one turn")
    token_budget: int = Field(2000, ge=100, description="tokens of memory per prompt")
    recall_k: int = Field(5, ge=0, le=50, description="notes recalled next to each message")


def _default_ollama_host() -> str:
    """Ollama's own `OLLAMA_HOST`, as the `ollama` command reads it, else the local server."""
    return os.environ.get("OLLAMA_HOST", "").strip() or "http://127.0.0.1:11434"


def ollama_url(host: str) -> str:
    """A host as Ollama reads it (`0.0.0.0`, `name:port` or a URL) as the URL to call:
    http, and port 11434, unless given."""
    from urllib.parse import urlsplit

    scheme, given, rest = host.strip().partition("://")
    if not given:
        scheme, rest = "http", host.strip()
    if scheme not in ("http", "https"):
        raise ValueError(f"{host!r} is not an http:// or https:// URL")
    parts = urlsplit(f"{scheme}://{rest}")
    port = parts.port or (443 if scheme == "https" else 80 if given else 11434)
    name = parts.hostname or "127.0.0.1"
    name = f"[{name}]" if ":" in name else name
    return f"{scheme}://{name}:{port}{parts.path.rstrip('/')}"


class OllamaSettings(_Section):
    host: str = Field(
        default_factory=_default_ollama_host,
        validate_default=True,
        description="where Ollama listens; default: $OLLAMA_HOST, else http://127.0.0.1:11434",
    )
    model: str = "qwen3:8b"
    timeout_s: float = Field(120.0, gt=0, description="how long one model answer may take")
    probe_timeout_s: float = Field(
        5.0, gt=0, description="how long asking Ollama about the model (and connecting) may take"
    )
    reasoning_effort: str | None = Field(None, pattern="^(low|medium|high|none)$")
    show_thinking: bool = False
    embed_model: str | None = None

    @field_validator("host")
    @classmethod
    def _url(cls, host: str) -> str:
        return ollama_url(host)


class BotSettings(_Section):
    name: str = Field("lorebot", description="how the bot calls itself")
    admins: tuple[str, ...] = Field(
        (), description="user scopes that may decide any card, e.g. user:slack/U024BE7LH"
    )
    allowed_users: tuple[str, ...] = Field(
        (), description="if set, only these user scopes are heard"
    )
    allowed_channels: tuple[str, ...] = Field(
        (), description="if set, only these channel scopes (DMs always)"
    )
    read_only_channels: tuple[str, ...] = Field(
        (), description="channel scopes whose memory cannot be changed from chat"
    )
    proposal_ttl_hours: float = Field(24.0, gt=0, description="when an undecided card expires")
    max_concurrent_model_calls: int = Field(2, ge=1, description="model calls in flight")
    queue_size: int = Field(100, ge=1, description="waiting events before the bot is busy")
    tool_timeout_s: float = Field(20.0, gt=0, description="longest run of one tool call")
    max_tool_rounds: int = Field(4, ge=1, le=20, description="model calls per turn")
    max_tool_calls_per_round: int = Field(
        8, ge=1, le=100, description="calls of one model answer that run; the rest get an error"
    )
    max_cards_per_turn: int = Field(
        3, ge=1, le=50, description="cards one turn may post; past it the model gets an error"
    )
    max_reply_chars: int = Field(
        8000, ge=200, le=1_000_000, description="longer model replies are cut, with a notice"
    )
    shutdown_timeout_s: float = Field(30.0, gt=0, description="how long in-flight turns get")
    adapter_grace_s: float = Field(120.0, gt=0, description="disconnected this long: unhealthy")


class SlackSettings(_Section):
    """Socket Mode with `bot_token` and `app_token`; HTTP Events mode when
    `signing_secret` and `listen` are set."""

    bot_token: SecretStr | None = Field(None, description="the Bot User OAuth Token, xoxb-…")
    app_token: SecretStr | None = Field(
        None, description="an app-level token, xapp-…, for Socket Mode"
    )
    signing_secret: SecretStr | None = Field(None, description="for HTTP Events mode")
    listen: str | None = Field(
        None, pattern=r"^[^:\s]*:\d{1,5}$", description="host:port, for HTTP Events mode"
    )
    events_path: str = Field("/slack/events", description="the path Slack posts events to")
    api_base_url: str = "https://slack.com/api/"

    @property
    def configured(self) -> bool:
        return self.bot_token is not None and (
            self.app_token is not None
            or (self.signing_secret is not None and self.listen is not None)
        )


class DiscordSettings(_Section):
    token: SecretStr | None = Field(None, description="the bot token")
    api_base_url: str = "https://discord.com/api/v10"
    gateway_url: str | None = Field(None, description="override for tests and proxies")
    command_guild_id: int | None = Field(
        None,
        gt=0,
        description="a guild (server) id where the /lorebot slash commands are registered at "
        "once; without it they are registered globally, which Discord can take up to an hour "
        "to show",
    )

    @property
    def configured(self) -> bool:
        return self.token is not None


def _home_skills() -> Path:
    return home() / ".agents" / "skills"


def _user_skills() -> Path:
    # A service's home is read-only: skills it writes belong in its state directory.
    state = state_directory()
    if state is not None:
        return state / "skills"
    return xdg_dir("XDG_CONFIG_HOME", ".config") / "lorebot" / "skills"


EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class SkillsSettings(_Section):
    """Skill roots, searched in order (later wins): bundled, `home_root`, `user_root`
    (where approved new skills are written), then `dirs`."""

    home_root: Path = Field(default_factory=_home_skills)
    user_root: Path = Field(default_factory=_user_skills)
    dirs: tuple[Path, ...] = ()
    catalog_max_bytes: int = Field(4096, ge=256)
    channels: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="channel scope -> the only skills allowed there"
    )
    scripts: Literal["disabled", "sandboxed", "host"] = Field(
        "disabled",
        description="run skill scripts: never, under bubblewrap, or as lorebot's own user",
    )
    script_timeout_s: float = Field(60.0, gt=0, le=3600, description="wall clock, one run")
    script_cpu_s: int = Field(30, ge=1, le=3600, description="CPU seconds, per process")
    script_memory_mb: int = Field(512, ge=64, description="address space, per process")
    script_output_bytes: int = Field(
        65536, ge=1024, le=16 * 1024 * 1024, description="kept of stdout and of stderr"
    )
    script_env: dict[EnvName, str] = Field(
        default_factory=dict,
        description="the only variables a script gets besides PATH, HOME, LANG; ${NAME} values "
        "come from lorebot's environment",
    )


_SECRET_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def resolve_secret(value: str, where: str = "mcp settings") -> str:
    """`${NAME}` stands for the variable NAME of lorebot's own environment (a secret kept
    out of the config file); any other value is taken as written. `where` names the
    settings that use it, for the error when NAME is not set."""
    match = _SECRET_REF.match(value)
    if match is None:
        return value
    found = os.environ.get(match.group(1))
    if found is None:
        raise ConfigError(f"{value} is used in the {where} but {match.group(1)} is not set")
    return found


class McpServerSettings(_Section):
    """One MCP server: a stdio `command` (with `args`, `cwd` and only the `env` given
    here) or a Streamable HTTP `url` (with `headers`). Values of `env` and `headers` may
    name a secret of lorebot's environment as `${NAME}`."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,31}$", description="its tools are NAME__TOOL")
    command: str | None = Field(None, description="a stdio server's program")
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: dict[str, str] = Field(default_factory=dict, description="its only variables")
    url: str | None = Field(None, pattern=r"^https?://", description="a Streamable HTTP server")
    headers: dict[str, str] = Field(default_factory=dict)
    trust: Literal["untrusted", "trusted"] = "untrusted"
    allow: tuple[str, ...] = Field((), description="tools that run without a card")
    channels: tuple[str, ...] = Field((), description="channel scopes offered its tools; all")
    approvers: Literal["requester", "admins"] = "requester"
    timeout_s: float = Field(30.0, gt=0, description="one tool call")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of command or url")
        return self

    def identity(self) -> str:
        """A short hash of what the server is: its command, arguments, folder and `env`, or
        its URL and `headers`, as configured (a `${NAME}` as written, so a rotated secret
        keeps the identity, while pointing a variable at another cluster changes it)."""
        what = [self.command, list(self.args), str(self.cwd or ""), self.url,
                sorted(self.env.items()), sorted(self.headers.items())]  # fmt: skip
        canonical = json.dumps(what, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def resolved_env(self) -> dict[str, str]:
        return {key: resolve_secret(value) for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        return {key: resolve_secret(value) for key, value in self.headers.items()}


class McpSettings(_Section):
    """The operator's MCP servers, whose tools the model may call (each run approved on a
    card unless exempted)."""

    servers: tuple[McpServerSettings, ...] = Field(
        (), description="the MCP servers whose tools the model may call"
    )
    result_max_chars: int = Field(4000, ge=200, description="of a tool's output, for the model")
    connect_timeout_s: float = Field(
        20.0, gt=0, description="how long a server may take to start and list its tools"
    )

    @model_validator(mode="after")
    def _unique_names(self) -> McpSettings:
        names = [server.name for server in self.servers]
        if len(names) != len(set(names)):
            raise ValueError("two MCP servers have the same name")
        return self


def _check_cron(expression: str) -> str:
    from apscheduler.triggers.cron import CronTrigger  # only for a cron given in settings

    try:
        CronTrigger.from_crontab(expression, timezone="UTC")
    except ValueError as exc:
        raise ValueError(
            f"{expression!r} is not a cron expression ({exc}): write five fields, minute "
            "hour day month weekday, e.g. '30 23 * * *'"
        ) from None
    return expression


def _check_timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ValueError, LookupError):
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name such as 'UTC' or 'Europe/Berlin'"
        ) from None
    return name


Cron = Annotated[str, AfterValidator(_check_cron)]
TimeZone = Annotated[str, AfterValidator(_check_timezone)]


class DigestSettings(_Section):
    channel: str = Field(description="the channel scope to post in, e.g. channel:slack/C0123")
    cron: Cron = Field("0 9 * * 1-5", description="when to post")


class JobsSettings(_Section):
    """Scheduled jobs; cron expressions are read in `timezone`."""

    enabled: bool = Field(True, description="run the scheduled jobs")
    timezone: TimeZone = Field("UTC", description="the zone cron expressions are read in")
    reflection_cron: Cron = Field("30 23 * * *", description="daily reflection")
    patterns_cron: Cron = Field("0 3 * * *", description="nightly pattern extraction")
    maintenance_cron: Cron = Field("5 * * * *", description="hourly maintenance")
    digests: tuple[DigestSettings, ...] = Field((), description="one digest per channel")
    grace_minutes: int = Field(360, ge=0, description="how late a missed run may still run")
    retry_minutes: int = Field(15, ge=1)
    min_samples: int = Field(5, ge=2, description="repeats before an action is a pattern")
    window_days: int = Field(30, ge=1, description="how far back patterns look")
    reflection_ttl_days: int = Field(30, ge=1)
    reflection_min_overlap: float = Field(0.5, ge=0, le=1)
    backup_dir: Path | None = Field(None, description="daily backups by the maintenance job")
    backup_keep: int = Field(7, ge=1, description="backups kept")

    @field_validator("backup_dir")
    @classmethod
    def _absolute_dir(cls, path: Path | None) -> Path | None:
        return None if path is None else absolute(path)


class ObservabilitySettings(_Section):
    listen: str | None = Field(
        None, pattern=r"^[^:\s]*:\d{1,5}$", description="host:port for /healthz and /metrics"
    )
    log_format: Literal["text", "json"] = Field("text", description="log lines as text or JSON")


@dataclass(frozen=True, slots=True)
class SystemdEnvironment:
    """What systemd tells a service through its environment."""

    notify_socket: str | None
    watchdog_usec: int | None


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
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    bot: BotSettings = Field(default_factory=BotSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)

    def secrets(self) -> list[str]:
        """Every configured secret value, so logs can be scrubbed of them."""
        found = [value for value in _secret_values(self) if value]
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
        (variable_name(keys[:n]) for n in range(len(keys) - 1, 0, -1)
         if variable_name(keys[:n]) in variables),
        None,
    )  # fmt: skip


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
    for origin, variables in (("the environment", inputs.environ),
                              (str(inputs.dotenv_file), inputs.dotenv)):  # fmt: skip
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
            lines.append(f"{key} in {source} is not a lorebot setting: "
                         f"{_nearest(dotted, _dotted_names())}")  # fmt: skip
            continue
        message = error["msg"].removeprefix("Value error, ")
        field = _field_at(loc)
        if error["type"] == "string_pattern_mismatch" and field and field.description:
            message = f"should be {field.description}, not {error['input']!r}"
        keys = [p for p in loc if isinstance(p, str)]
        where = f"or {variable_name(keys)}" if source.origin == "default" else str(source)
        lines.append(f"{key} ({where}): {message}")
    return lines


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
