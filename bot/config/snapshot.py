"""The settings a read-only command needs, kept from its last full load, so that
`lorebot notes search` starts without pydantic (most of a cold start's time).

A snapshot is the full loader's own result, written when a command that may use one (see
`SNAPSHOT_COMMANDS` in bot/cli/main.py) succeeded on settings loaded in full. It is used only
when every input it came from is unchanged: the config file's bytes, lorebot's
environment variables and `.env`, the other variables defaults come from, the working
folder, and the settings code itself. Any difference loads the settings in full again.
It holds no secret: the commands that use it never need one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from bot.config.paths import DOTENV_FILE, ENV_PREFIX, find_config_file, xdg_dir

if TYPE_CHECKING:
    from bot.config.settings import Settings

_log = logging.getLogger(__name__)

FORMAT = 2
# Besides LOREBOT_…, the variables a default depends on (the `default_factory` of settings
# in bot/config/sections.py and the paths of bot/config/paths.py); a test keeps this list complete.
DEFAULT_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "STATE_DIRECTORY",
    "OLLAMA_HOST",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)
_SETTINGS_CODE = ("settings.py", "sections.py", "model_sections.py", "loading.py", "paths.py")


class DatabaseView(NamedTuple):
    path: Path
    busy_timeout_ms: int


class MemoryView(NamedTuple):
    max_note_bytes: int
    index_max_lines: int
    index_max_bytes: int


class ModelServerView(NamedTuple):
    backend: str
    url: str
    embed_model: str | None
    timeout_s: float
    probe_timeout_s: float


class ObservabilityView(NamedTuple):
    log_format: str


class SettingsSnapshot(NamedTuple):
    """The part of `Settings` that reading notes uses, under the same names."""

    config: Path | None
    log_level: str
    database: DatabaseView
    memory: MemoryView
    model_server: ModelServerView
    observability: ObservabilityView

    def secrets(self) -> list[str]:
        """None are kept; the commands that read a snapshot hold no secret to scrub."""
        return []

    @classmethod
    def of(cls, settings: Settings) -> SettingsSnapshot:
        return cls(
            settings.config,
            settings.log_level,
            DatabaseView(settings.database.path, settings.database.busy_timeout_ms),
            MemoryView(*(getattr(settings.memory, name) for name in MemoryView._fields)),
            ModelServerView(
                *(getattr(settings.model_server, name) for name in ModelServerView._fields)
            ),
            ObservabilityView(settings.observability.log_format),
        )


def snapshot_file() -> Path:
    return xdg_dir("XDG_CACHE_HOME", ".cache") / "lorebot" / "settings.json"


def load(config_option: Path | None) -> SettingsSnapshot | None:
    """The snapshot written for exactly the current inputs, else None."""
    try:
        stored = json.loads(snapshot_file().read_bytes())
        if stored.get("key") != inputs_key(config_option):
            return None
        return _from_json(stored["settings"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none yet, unreadable or of another format: load in full


def save(config_option: Path | None, settings: Settings) -> None:
    """Keep `settings` for the next command with the same inputs; a cache folder that
    cannot be written (a read-only home under systemd) only costs that speed."""
    key = inputs_key(config_option)
    if key is None or settings.openai.api_key is not None or settings.database.url is not None:
        return  # a key or a database URL is never written to a cache: the next loads in full
    text = json.dumps({"key": key, "settings": _to_json(SettingsSnapshot.of(settings))})
    target = snapshot_file()
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=target.parent, prefix=".settings-", delete=False
        ) as handle:
            handle.write(text)
        os.replace(handle.name, target)
    except OSError as exc:
        _log.debug("settings snapshot not written to %s: %s", target, exc)


def inputs_key(config_option: Path | None) -> str | None:
    """A digest of everything the settings are read from; None when the config file named
    cannot be read (the full load says why)."""
    digest = hashlib.sha256(f"{FORMAT}\0{os.getcwd()}\0".encode())
    config = find_config_file(config_option)
    sources = [*(Path(__file__).with_name(name) for name in _SETTINGS_CODE), DOTENV_FILE]
    try:
        for path in (*sources, config):
            if path is None:
                continue
            data = path.read_bytes() if path != DOTENV_FILE or path.is_file() else b""
            digest.update(f"{path.absolute()}\0{len(data)}\0".encode() + data)
    except OSError:
        return None
    lorebot = {k.upper(): v for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX)}
    defaults = {name: os.environ.get(name) for name in DEFAULT_VARIABLES}
    digest.update(json.dumps([sorted(lorebot.items()), defaults]).encode())
    return digest.hexdigest()


def _to_json(snapshot: SettingsSnapshot) -> dict[str, Any]:
    database, memory, model_server, observability = snapshot[2:]
    return {
        "config": None if snapshot.config is None else str(snapshot.config),
        "log_level": snapshot.log_level,
        "database": {"path": str(database.path), "busy_timeout_ms": database.busy_timeout_ms},
        "memory": memory._asdict(),
        "model_server": model_server._asdict(),
        "observability": observability._asdict(),
    }


def _from_json(values: dict[str, Any]) -> SettingsSnapshot:
    database = values["database"]
    return SettingsSnapshot(
        None if values["config"] is None else Path(values["config"]),
        values["log_level"],
        DatabaseView(Path(database["path"]), database["busy_timeout_ms"]),
        MemoryView(**values["memory"]),
        ModelServerView(**values["model_server"]),
        ObservabilityView(**values["observability"]),
    )
