"""Where lorebot looks for its config file and keeps its database: the paths settings
start from, with no settings library loaded (the settings snapshot needs them too)."""

from __future__ import annotations

import os
from pathlib import Path

ENV_PREFIX = "LOREBOT_"
DOTENV_FILE = Path(".env")
SYSTEM_CONFIG = Path("/etc/lorebot/config.toml")


def home() -> Path:
    try:
        return Path.home()
    except RuntimeError:  # no HOME and no password entry, as for some service users
        return Path("/")


def xdg_dir(variable: str, fallback: str) -> Path:
    """An XDG base directory; relative values are ignored, as the specification says."""
    value = os.environ.get(variable, "")
    return Path(value) if os.path.isabs(value) else home() / fallback


def state_directory() -> Path | None:
    """The first of systemd's `$STATE_DIRECTORY` folders, when running as a service."""
    first = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    return Path(first).absolute() if first else None


def default_database_path() -> Path:
    """`$STATE_DIRECTORY/lorebot.db` under systemd, else `$XDG_DATA_HOME/lorebot/lorebot.db`."""
    state = state_directory()
    if state is not None:
        return state / "lorebot.db"
    return xdg_dir("XDG_DATA_HOME", ".local/share") / "lorebot" / "lorebot.db"


def user_config_path() -> Path:
    """Where this user's config file is looked for: `$XDG_CONFIG_HOME/lorebot/config.toml`."""
    return xdg_dir("XDG_CONFIG_HOME", ".config") / "lorebot" / "config.toml"


def find_config_file(explicit: Path | None = None) -> Path | None:
    """The config file in use: `explicit` (`--config`), `$LOREBOT_CONFIG`, else the first
    of the user's and the system's config files that exists."""
    if explicit is None and os.environ.get(ENV_PREFIX + "CONFIG"):
        explicit = Path(os.environ[ENV_PREFIX + "CONFIG"])
    if explicit is not None:
        return absolute(explicit)
    return next((p for p in (user_config_path(), SYSTEM_CONFIG) if p.is_file()), None)


def absolute(path: Path) -> Path:
    """The path as lorebot prints it: `~` expanded and made absolute (not resolved)."""
    return path if str(path) == ":memory:" else path.expanduser().absolute()


def old_database_hint(database: Path) -> str | None:
    """How to move `./lorebot.db`, where lorebot kept its database before, when it exists
    and `database` (the default) does not yet."""
    old = Path("lorebot.db").absolute()
    if database != default_database_path() or old == database or database.exists():
        return None
    if not old.is_file():
        return None
    return (
        f"{old} is from an older lorebot, which kept its database in the working folder: "
        f"move it with `mkdir -p {database.parent} && mv {old} {database}` while lorebot "
        f"is stopped, or keep it there with LOREBOT_DATABASE__PATH={old}"
    )
