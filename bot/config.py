"""Configuration: one frozen settings object read once at start and passed in.

Sources, highest priority first: environment variables `LOREBOT_…` (nested with `__`,
e.g. `LOREBOT_OLLAMA__MODEL`), a `.env` file, then a TOML file given by `--config` or
`LOREBOT_CONFIG`. This is the only module that reads the environment.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from bot.errors import ConfigError


def default_database_path() -> Path:
    """`$STATE_DIRECTORY/lorebot.db` under systemd, otherwise `./lorebot.db`."""
    state_dirs = os.environ.get("STATE_DIRECTORY", "")
    if state_dirs:
        return Path(state_dirs.split(":")[0]) / "lorebot.db"
    return Path("lorebot.db")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatabaseSettings(_Section):
    path: Path = Field(default_factory=default_database_path)
    busy_timeout_ms: int = Field(5000, ge=0)


class MemorySettings(_Section):
    max_note_bytes: int = Field(4096, ge=64, le=1_000_000)
    index_max_lines: int = Field(40, ge=1)
    index_max_bytes: int = Field(2048, ge=64)
    turn_max_bytes: int = Field(6144, ge=64)
    token_budget: int = Field(2000, ge=100, description="tokens of memory per prompt")
    recall_k: int = Field(5, ge=0, le=50)


class OllamaSettings(_Section):
    host: str = "http://127.0.0.1:11434"
    model: str = "qwen3:8b"
    timeout_s: float = Field(120.0, gt=0)
    reasoning_effort: str | None = Field(None, pattern="^(low|medium|high|none)$")
    show_thinking: bool = False
    embed_model: str | None = None


class BotSettings(_Section):
    name: str = "lorebot"
    admins: tuple[str, ...] = ()
    allowed_users: tuple[str, ...] = ()
    allowed_channels: tuple[str, ...] = ()
    read_only_channels: tuple[str, ...] = ()
    proposal_ttl_hours: float = Field(24.0, gt=0)
    max_concurrent_model_calls: int = Field(2, ge=1)
    queue_size: int = Field(100, ge=1)
    tool_timeout_s: float = Field(20.0, gt=0)
    max_tool_rounds: int = Field(4, ge=1, le=20)
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

    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    listen: str | None = Field(None, pattern=r"^[^:\s]*:\d{1,5}$", description="host:port")
    events_path: str = "/slack/events"
    api_base_url: str = "https://slack.com/api/"

    @property
    def configured(self) -> bool:
        return self.bot_token is not None and (
            self.app_token is not None
            or (self.signing_secret is not None and self.listen is not None)
        )


class DiscordSettings(_Section):
    token: SecretStr | None = None
    api_base_url: str = "https://discord.com/api/v10"
    gateway_url: str | None = Field(None, description="override for tests and proxies")

    @property
    def configured(self) -> bool:
        return self.token is not None


def _home_skills() -> Path:
    return Path.home() / ".agents" / "skills"


def _user_skills() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "lorebot" / "skills"


# An environment variable's name.
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


def resolve_secret(value: str) -> str:
    """`${NAME}` stands for the variable NAME of lorebot's own environment (a secret kept
    out of the config file); any other value is taken as written."""
    match = _SECRET_REF.match(value)
    if match is None:
        return value
    found = os.environ.get(match.group(1))
    if found is None:
        raise ConfigError(f"{value} is used in the mcp settings but {match.group(1)} is not set")
    return found


class McpServerSettings(_Section):
    """One MCP server: a stdio `command` (with `args`, `cwd` and only the `env` given
    here) or a Streamable HTTP `url` (with `headers`). Values of `env` and `headers` may
    name a secret of lorebot's environment as `${NAME}`."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,31}$", description="its tools are NAME__TOOL")
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = Field(None, pattern=r"^https?://")
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

    def resolved_env(self) -> dict[str, str]:
        return {key: resolve_secret(value) for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        return {key: resolve_secret(value) for key, value in self.headers.items()}


class McpSettings(_Section):
    """The operator's MCP servers, whose tools the model may call (each run approved on a
    card unless exempted)."""

    servers: tuple[McpServerSettings, ...] = ()
    result_max_chars: int = Field(4000, ge=200, description="of a tool's output, for the model")
    connect_timeout_s: float = Field(20.0, gt=0)

    @model_validator(mode="after")
    def _unique_names(self) -> McpSettings:
        names = [server.name for server in self.servers]
        if len(names) != len(set(names)):
            raise ValueError("two MCP servers have the same name")
        return self


class DigestSettings(_Section):
    channel: str = Field(description="the channel scope to post in, e.g. channel:slack/C0123")
    cron: str = "0 9 * * 1-5"


class JobsSettings(_Section):
    """Scheduled jobs; cron expressions are read in `timezone`."""

    enabled: bool = True
    timezone: str = "UTC"
    reflection_cron: str = "30 23 * * *"
    patterns_cron: str = "0 3 * * *"
    maintenance_cron: str = "5 * * * *"
    digests: tuple[DigestSettings, ...] = ()
    grace_minutes: int = Field(360, ge=0, description="how late a missed run may still run")
    retry_minutes: int = Field(15, ge=1)
    min_samples: int = Field(5, ge=2)
    window_days: int = Field(30, ge=1)
    reflection_ttl_days: int = Field(30, ge=1)
    reflection_min_overlap: float = Field(0.5, ge=0, le=1)
    backup_dir: Path | None = None
    backup_keep: int = Field(7, ge=1)


class ObservabilitySettings(_Section):
    listen: str | None = Field(
        None, pattern=r"^[^:\s]*:\d{1,5}$", description="host:port for /healthz and /metrics"
    )
    log_format: str = Field("text", pattern="^(text|json)$")


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


class Settings(BaseSettings):
    """Everything lorebot can be configured with; defaults run with no config at all."""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        env_prefix="LOREBOT_",
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
    )

    config: Path | None = Field(None, description="the TOML file these settings came from")
    log_level: str = Field("INFO", pattern="^(DEBUG|INFO|WARNING|ERROR)$")
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
        values = [self.slack.bot_token, self.slack.app_token, self.slack.signing_secret,
                  self.discord.token]  # fmt: skip
        found = [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]
        for server in self.mcp.servers:
            for value in (*server.env.values(), *server.headers.values()):
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
        return env_settings, dotenv_settings, init_settings


def _resolved_or_none(value: str) -> str | None:
    try:
        return resolve_secret(value)
    except ConfigError:
        return None


def load_settings(config_file: Path | None = None) -> Settings:
    """Read the settings once; any problem becomes a one-line `ConfigError`."""
    if config_file is None and os.environ.get("LOREBOT_CONFIG"):
        config_file = Path(os.environ["LOREBOT_CONFIG"])
    values: dict[str, Any] = {}
    if config_file is not None:
        values = _read_toml(config_file)
        values["config"] = config_file
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, config_file)) from None


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


def _describe(exc: ValidationError, config_file: Path | None) -> str:
    problems = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        env = "LOREBOT_" + "__".join(str(p) for p in error["loc"]).upper()
        problems.append(f"{key} (or {env}): {error['msg']}")
    where = f" in {config_file}" if config_file else ""
    return f"invalid configuration{where}: " + "; ".join(problems)
