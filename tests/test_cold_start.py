"""A one-shot command imports only what it uses: `lorebot --help` and `notes search` start
in a fraction of a second because the daemon's platforms, the HTTP server, the MCP SDK,
the model client and numpy are imported only by the commands that use them.

Wall time is measured by `benchmarks/cold_start.py`; these tests check the cause (which
modules a cold process imports), which does not flake on a busy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.import_probe import PROBE

# Each is tens to hundreds of milliseconds of imports, and none is needed to read notes.
DAEMON_ONLY = (
    "aiohttp",
    "discord",
    "slack_bolt",
    "slack_sdk",
    "mcp",
    "ollama",
    "httpx",
    "numpy",
    "apscheduler",
    "prometheus_client",
    "jsonschema",
    "yaml",
    "tqdm",
    "sqlite_vec",
    "openai",
    "httpx2",
)


def _imported(tmp_path: Path, *argv: str) -> tuple[int, str, set[str]]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out, _, imported = done.stdout.rpartition("\nIMPORTED ")
    assert imported, done.stderr
    return done.returncode, out + done.stderr, set(json.loads(imported))


@pytest.mark.parametrize(
    "argv",
    [
        ("notes", "--help"),
        ("notes", "search", "staging db", "--scope", "channel:slack/C1"),
        ("notes", "list", "--scope", "channel:slack/C1"),
        ("proposals", "list"),
        ("config", "show"),
    ],
)
def test_a_one_shot_command_leaves_the_daemons_libraries_unimported(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    code, out, imported = _imported(
        tmp_path, "notes", "add", "channel:slack/C1", "staging-db", "the staging db is db-2"
    )
    assert code == 0, out
    code, out, imported = _imported(tmp_path, *argv)
    assert code == 0, out
    packages = {name.split(".")[0] for name in imported}
    assert not packages & set(DAEMON_ONLY), sorted(packages & set(DAEMON_ONLY))


def test_help_loads_neither_the_settings_nor_memory_nor_the_adapter_contract(
    tmp_path: Path,
) -> None:
    code, out, imported = _imported(tmp_path, "--help")
    assert code == 0 and "notes" in out
    heavy = {"pydantic", "pydantic_settings", "memory.types", "adapters.base", "dataclasses"}
    assert not imported & heavy, sorted(imported & heavy)


def test_a_search_after_the_first_starts_without_the_settings_library(tmp_path: Path) -> None:
    """The first search loads the settings in full and keeps a snapshot; the next one,
    with nothing changed, reads that and finds the same notes."""
    _imported(tmp_path, "notes", "add", "channel:slack/C1", "staging-db", "the staging db")
    search = ("notes", "search", "staging", "--scope", "channel:slack/C1")
    first_code, first, first_imported = _imported(tmp_path, *search)
    code, again, imported = _imported(tmp_path, *search)
    assert first_code == code == 0 and "staging-db" in first and again == first
    assert "pydantic" in first_imported
    assert not imported & {"pydantic", "pydantic_settings", "dotenv"}, sorted(imported)


def test_the_categories_notes_add_offers_are_memorys() -> None:
    from bot.cli.notes import CATEGORIES
    from memory.types import Category

    assert tuple(category.value for category in Category) == CATEGORIES


def test_help_does_not_even_load_the_settings(tmp_path: Path) -> None:
    code, out, imported = _imported(tmp_path, "--help")
    assert code == 0 and "commands" in out
    assert not imported & {"pydantic", "pydantic_settings", "aiosqlite", *DAEMON_ONLY}


def test_search_with_a_result_finds_it(tmp_path: Path) -> None:
    """The lazy path still does the work."""
    _imported(tmp_path, "notes", "add", "channel:slack/C1", "staging-db", "the staging db")
    code, out, _ = _imported(
        tmp_path, "notes", "search", "staging", "--scope", "channel:slack/C1", "--json"
    )
    assert code == 0, out
    assert json.loads(out)[0]["topic"] == "staging-db"
