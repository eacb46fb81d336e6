"""The settings snapshot of read-only commands: `notes search` after a change to anything
the settings come from acts on the new settings, never on the snapshot of the old ones.

Each test first searches once, which loads the settings in full and keeps a snapshot,
then changes one input and searches again through the real command line.
"""

from __future__ import annotations

import ast
import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config import snapshot as settings_snapshot
from bot.config.loading import load_settings
from bot.config.snapshot import SettingsSnapshot

SEARCH = ("notes", "search", "staging", "--scope", "channel:slack/C1")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _database(env: Path, name: str) -> Path:
    """A database in a folder of its own, where `$XDG_DATA_HOME` = env/name puts it."""
    return env / name / "lorebot" / "lorebot.db"


def _by_variable(env: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(_database(env, name)))


def _by_config_file(env: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = env / "xdg-config" / "lorebot" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[database]\npath = "{_database(env, name)}"\n')


def _by_dotenv(env: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (env / ".env").write_text(f"LOREBOT_DATABASE__PATH={_database(env, name)}\n")


def _by_data_home(env: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No path set anywhere: the default follows $XDG_DATA_HOME."""
    monkeypatch.setenv("XDG_DATA_HOME", str(env / name))


def _by_working_folder(env: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same relative path, from another folder, is another database."""
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", "lorebot/lorebot.db")
    monkeypatch.chdir(env / name)


@pytest.mark.parametrize(
    "point_at",
    [_by_variable, _by_config_file, _by_dotenv, _by_data_home, _by_working_folder],
)
def test_a_search_after_the_database_moved_reads_the_new_one(
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    point_at: Callable[[Path, str, pytest.MonkeyPatch], None],
) -> None:
    for name in ("first", "second"):
        _by_variable(env, name, monkeypatch)
        run(capsys, "notes", "add", "channel:slack/C1", f"{name}-db", f"staging on {name}")
    monkeypatch.delenv("LOREBOT_DATABASE__PATH")
    point_at(env, "first", monkeypatch)
    code, out, err = run(capsys, *SEARCH)
    assert code == 0 and "first-db" in out, err
    assert settings_snapshot.snapshot_file().is_file()

    point_at(env, "second", monkeypatch)
    code, out, err = run(capsys, *SEARCH)
    assert code == 0, err
    assert "second-db" in out and "first-db" not in out


@pytest.fixture
def searched_once(env: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A note in the env fixture's database, and a search that kept the snapshot."""
    run(capsys, "notes", "add", "channel:slack/C1", "first-db", "staging runs on db-1")
    code, out, _ = run(capsys, *SEARCH)
    assert code == 0 and "first-db" in out
    assert settings_snapshot.snapshot_file().is_file()
    return env / "cli.db"


def test_settings_that_became_invalid_are_reported_not_taken_from_the_snapshot(
    env: Path, searched_once: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = env / "xdg-config" / "lorebot" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[memory]\nmax_note_bytes = 10\n")
    code, out, err = run(capsys, *SEARCH)
    assert code == 1 and out == ""
    assert "memory.max_note_bytes" in err


def test_a_mistyped_variable_is_reported_not_taken_from_the_snapshot(
    env: Path,
    searched_once: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOREBOT_DATABSE__PATH", str(searched_once))
    code, _, err = run(capsys, *SEARCH)
    assert code == 1 and "LOREBOT_DATABSE__PATH" in err


def test_the_snapshot_keeps_no_secret_and_only_its_owner_reads_it(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "xoxb-1234567890-0987654321-abcdefghijklmnopqrstuvwx"
    monkeypatch.setenv("LOREBOT_SLACK__BOT_TOKEN", token)
    monkeypatch.setenv("LOREBOT_DISCORD__TOKEN", "discord-token-that-stays-in-the-environment")
    run(capsys, "notes", "add", "channel:slack/C1", "first-db", "staging runs on db-1")
    assert run(capsys, *SEARCH)[0] == 0
    kept = settings_snapshot.snapshot_file()
    text = kept.read_text()
    assert token not in text and "discord-token" not in text and "xoxb" not in text
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_a_cache_folder_that_cannot_be_written_only_costs_speed(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = env / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    run(capsys, "notes", "add", "channel:slack/C1", "first-db", "staging runs on db-1")
    for _ in range(2):
        code, out, err = run(capsys, *SEARCH)
        assert code == 0 and "first-db" in out and err == ""


def test_a_damaged_snapshot_is_replaced_by_a_full_load(
    env: Path, searched_once: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = settings_snapshot.snapshot_file()
    stored = json.loads(kept.read_text())
    for damaged in ("{not json", json.dumps({**stored, "settings": {"database": {}}})):
        kept.write_text(damaged)
        code, out, err = run(capsys, *SEARCH)
        assert code == 0 and "first-db" in out, err
        assert json.loads(kept.read_text()) == stored


def test_a_snapshot_reads_back_as_the_settings_it_was_made_of(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__EMBED_MODEL", "all-minilm")
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "ollama.internal:8080")
    monkeypatch.setenv("LOREBOT_MEMORY__INDEX_MAX_LINES", "12")
    monkeypatch.setenv("LOREBOT_OBSERVABILITY__LOG_FORMAT", "json")
    monkeypatch.setenv("LOREBOT_LOG_LEVEL", "debug")
    settings = load_settings()
    settings_snapshot.save(None, settings)
    kept = settings_snapshot.load(None)
    assert kept == SettingsSnapshot.of(settings)
    assert kept is not None and isinstance(kept.database.path, Path)
    _same_values(kept, settings)


def _same_values(view: object, settings: object) -> None:
    """Every value of the view is the setting of the same name."""
    for name in view._fields:  # type: ignore[attr-defined]
        value, setting = getattr(view, name), getattr(settings, name)
        if hasattr(value, "_fields"):
            _same_values(value, setting)
        else:
            assert value == setting, name


# systemd's own variables, read by `systemd_environment` for the watchdog, not by settings.
NOT_SETTINGS = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}


def _variables_read(source: str) -> set[str]:
    """The names in `os.environ.get("X")`, `os.environ["X"]` and `xdg_dir("X", …)`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            called = ast.unparse(node.func)
            if called in ("os.environ.get", "xdg_dir"):
                names.add(_name(node.args[0]))
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            names.add(_name(node.slice))
    return names


def _name(expression: ast.expr) -> str:
    """A variable's name, or the code that computes it."""
    if isinstance(expression, ast.Constant):
        return str(expression.value)
    return ast.unparse(expression)


def test_every_variable_the_settings_read_is_part_of_the_snapshots_key() -> None:
    """A default that reads a new variable must make the snapshot depend on it too."""
    folder = Path(settings_snapshot.__file__).parent
    code = ("settings.py", "sections.py", "model_sections.py", "loading.py", "paths.py")
    read = set().union(*(_variables_read((folder / name).read_text()) for name in code))
    assert {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "OLLAMA_HOST", "STATE_DIRECTORY"} <= read
    assert {"OPENAI_BASE_URL", "OPENAI_API_KEY"} <= read
    # LOREBOT_CONFIG; a secret's `${NAME}` (not in a snapshot); `xdg_dir`'s parameter.
    computed = {"ENV_PREFIX + 'CONFIG'", "match.group(1)", "variable"}
    assert read - computed - NOT_SETTINGS <= set(settings_snapshot.DEFAULT_VARIABLES)
