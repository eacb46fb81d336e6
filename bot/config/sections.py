"""The sections of lorebot's settings (`[database]`, `[ollama]`, `[mcp]`, …): each a
frozen model with its defaults, limits and the description `config init` and the
configuration reference print. `${NAME}` values stand for lorebot's own environment."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from bot.config.paths import (
    absolute,
    default_database_path,
    home,
    state_directory,
    xdg_dir,
)
from bot.errors import ConfigError
from memory.policy.conninfo import url_problem


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatabaseSettings(Section):
    path: Path = Field(
        default_factory=default_database_path,
        description="the SQLite database; by default $STATE_DIRECTORY/lorebot.db under "
        "systemd, else $XDG_DATA_HOME/lorebot/lorebot.db (~/.local/share/lorebot/lorebot.db)",
    )
    busy_timeout_ms: int = Field(5000, ge=0, description="how long to wait for a lock")
    url: SecretStr | None = Field(
        None,
        description="a PostgreSQL database instead of SQLite: postgresql://user@host:5432/db "
        "(libpq's PG… variables and PGPASSFILE apply); unset: SQLite at `path`",
    )
    pool_size: int = Field(
        5, ge=1, le=100, description="PostgreSQL connections the pool keeps at most"
    )

    @field_validator("path")
    @classmethod
    def _absolute_path(cls, path: Path) -> Path:
        return absolute(path)

    @field_validator("url")
    @classmethod
    def _postgresql_url(cls, url: SecretStr | None) -> SecretStr | None:
        if url is None or not url.get_secret_value().strip():
            return None
        if (problem := url_problem(url.get_secret_value())) is not None:
            raise ValueError(problem)  # which quotes none of it: it may hold a password
        return url


class MemorySettings(Section):
    max_note_bytes: int = Field(4096, ge=64, le=1_000_000, description="largest note body")
    index_max_lines: int = Field(40, ge=1, description="lines per scope index")
    index_max_bytes: int = Field(2048, ge=64, description="bytes per scope index")
    turn_max_bytes: int = Field(6144, ge=64, description="bytes of all indexes in one turn")
    token_budget: int = Field(2000, ge=100, description="tokens of memory per prompt")
    recall_k: int = Field(5, ge=0, le=50, description="notes recalled next to each message")


class BotSettings(Section):
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
    card_reminder_minutes: float = Field(
        30.0, ge=0, description="when a waiting card is sent to its approvers by DM; 0: never"
    )
    max_concurrent_model_calls: int = Field(2, ge=1, description="model calls in flight")
    queue_size: int = Field(100, ge=1, description="waiting events before the bot is busy")
    tool_timeout_s: float = Field(20.0, gt=0, description="longest run of one tool call")
    max_tool_rounds: int = Field(4, ge=1, le=20, description="model calls per turn")
    max_tool_calls_per_round: int = Field(
        8, ge=1, le=100, description="calls of one model answer that run; the rest get an error"
    )
    max_tool_mistakes: int = Field(
        3,
        ge=1,
        le=20,
        description="distinct tool mistakes (a tool that does not exist, bad arguments) told "
        "to the model in one turn; one more, or the same again, ends the turn",
    )
    max_cards_per_turn: int = Field(
        3, ge=1, le=50, description="cards one turn may post; past it the model gets an error"
    )
    max_reply_chars: int = Field(
        8000, ge=200, le=1_000_000, description="longer model replies are cut, with a notice"
    )
    shutdown_timeout_s: float = Field(30.0, gt=0, description="how long in-flight turns get")
    adapter_grace_s: float = Field(120.0, gt=0, description="disconnected this long: unhealthy")


class SlackSettings(Section):
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
    api_base_url: str = Field("https://slack.com/api/", description="Slack's Web API")
    buttons: bool = Field(
        True, description="Approve/Decline buttons on cards; needs the app's Interactivity"
    )

    @property
    def configured(self) -> bool:
        return self.bot_token is not None and (
            self.app_token is not None
            or (self.signing_secret is not None and self.listen is not None)
        )


class DiscordSettings(Section):
    token: SecretStr | None = Field(None, description="the bot token")
    api_base_url: str = Field("https://discord.com/api/v10", description="Discord's HTTP API")
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


class SkillsSettings(Section):
    """Skill roots, searched in order (later wins): bundled, `home_root`, `user_root`
    (where approved new skills are written), then `dirs`."""

    home_root: Path = Field(default_factory=_home_skills, description="the user's skills")
    user_root: Path = Field(
        default_factory=_user_skills, description="lorebot's skills; approved new ones go here"
    )
    dirs: tuple[Path, ...] = Field((), description="more skill folders, searched last")
    catalog_max_bytes: int = Field(
        4096, ge=256, description="the most the skill list in the prompt takes"
    )
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


class McpServerSettings(Section):
    """One MCP server: a stdio `command` (with `args`, `cwd` and only the `env` given
    here) or a Streamable HTTP `url` (with `headers`). Values of `env` and `headers` may
    name a secret of lorebot's environment as `${NAME}`."""

    name: str = Field(
        pattern=r"^[a-z][a-z0-9-]{0,31}$",
        description="a lowercase letter, then up to 31 lowercase letters, digits or hyphens "
        "(its tools are NAME__TOOL)",
    )
    command: str | None = Field(None, description="a stdio server's program")
    args: tuple[str, ...] = Field((), description="the program's arguments")
    cwd: Path | None = Field(None, description="the folder it runs in")
    env: dict[str, str] = Field(default_factory=dict, description="its only variables")
    url: str | None = Field(None, pattern=r"^https?://", description="a Streamable HTTP server")
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers sent to a url server"
    )
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
        what = [
            self.command,
            list(self.args),
            str(self.cwd or ""),
            self.url,
            sorted(self.env.items()),
            sorted(self.headers.items()),
        ]
        canonical = json.dumps(what, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def resolved_env(self) -> dict[str, str]:
        return {key: resolve_secret(value) for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        return {key: resolve_secret(value) for key, value in self.headers.items()}


class McpSettings(Section):
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
    from bot.cron import cron_trigger  # only for a cron given in settings

    try:
        cron_trigger(expression, "UTC")
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


class DigestSettings(Section):
    channel: str = Field(description="the channel scope to post in, e.g. channel:slack/C0123")
    cron: Cron = Field("0 9 * * 1-5", description="when to post")


class JobsSettings(Section):
    """Scheduled jobs; cron expressions are read in `timezone`."""

    enabled: bool = Field(True, description="run the scheduled jobs")
    timezone: TimeZone = Field("UTC", description="the zone cron expressions are read in")
    reflection_cron: Cron = Field("30 23 * * *", description="daily reflection")
    patterns_cron: Cron = Field("0 3 * * *", description="nightly pattern extraction")
    maintenance_cron: Cron = Field("5 * * * *", description="hourly maintenance")
    digests: tuple[DigestSettings, ...] = Field((), description="one digest per channel")
    grace_minutes: int = Field(360, ge=0, description="how late a missed run may still run")
    retry_minutes: int = Field(15, ge=1, description="when a failed run is tried again")
    min_samples: int = Field(5, ge=2, description="repeats before an action is a pattern")
    window_days: int = Field(30, ge=1, description="how far back patterns look")
    reflection_ttl_days: int = Field(30, ge=1, description="how long a reflection is kept")
    reflection_min_overlap: float = Field(
        0.5,
        ge=0,
        le=1,
        description="how much a reflection must share with a message to be recalled",
    )
    backup_dir: Path | None = Field(None, description="daily backups by the maintenance job")
    backup_keep: int = Field(7, ge=1, description="backups kept")

    @field_validator("backup_dir")
    @classmethod
    def _absolute_dir(cls, path: Path | None) -> Path | None:
        return None if path is None else absolute(path)


class ObservabilitySettings(Section):
    listen: str | None = Field(
        None, pattern=r"^[^:\s]*:\d{1,5}$", description="host:port for /healthz and /metrics"
    )
    log_format: Literal["text", "json"] = Field("text", description="log lines as text or JSON")
