"""Where lorebot keeps its database and finds its config, seen from a fresh shell: the XDG
folders, systemd's state directory, commands that read and create nothing, the move of an
older `./lorebot.db`, and files only their owner can read."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from memory.sqlite.database import SqliteDatabase
from tests.support.fresh_shell import Shell

NOTE = ("notes", "add", "channel:console/general", "staging-db", "staging DB is pg-stage-2")


def database_line(out: str) -> str:
    [line] = [line for line in out.splitlines() if line.startswith("database.path = ")]
    return line


def test_the_database_and_config_live_in_the_users_xdg_folders(shell: Shell) -> None:
    added = shell.run(*NOTE)
    assert added.code == 0, added.err
    database = shell.home / ".local/share/lorebot/lorebot.db"
    assert database.is_file()
    assert list(shell.cwd.iterdir()) == []  # nothing left in the working folder

    shown = shell.run("config", "show")
    assert database_line(shown.out) == f'database.path = "{database}"  (default)'
    assert f"config file: none (looked for {shell.home}/.config/lorebot/config.toml" in shown.out

    config = shell.home / ".config/lorebot/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[bot]\nname = "from-the-user-config"\n')
    shown = shell.run("config", "show")
    assert f"config file: {config}\n" in shown.out
    assert 'bot.name = "from-the-user-config"  (file)' in shown.out

    elsewhere = shell.root / "xdg-config"
    (elsewhere / "lorebot").mkdir(parents=True)
    (elsewhere / "lorebot/config.toml").write_text('[bot]\nname = "from-xdg-config-home"\n')
    shell.setenv("XDG_CONFIG_HOME", str(elsewhere))
    shell.setenv("XDG_DATA_HOME", str(shell.root / "xdg-data"))
    shown = shell.run("config", "show")
    assert 'bot.name = "from-xdg-config-home"  (file)' in shown.out
    fresh = shell.root / "xdg-data/lorebot/lorebot.db"
    assert database_line(shown.out) == f'database.path = "{fresh}"  (default)'

    named = shell.root / "named.toml"
    named.write_text('[bot]\nname = "from-lorebot-config"\n')
    shell.setenv("LOREBOT_CONFIG", str(named))
    assert 'bot.name = "from-lorebot-config"' in shell.run("config", "show").out
    given = shell.root / "given.toml"
    given.write_text('[bot]\nname = "from-the-option"\n')
    shown = shell.run("config", "show", "--config", str(given))
    assert 'bot.name = "from-the-option"' in shown.out and f"config file: {given}\n" in shown.out


def test_the_system_config_is_read_when_the_user_has_none(shell: Shell) -> None:
    import bot.config.paths

    bot.config.paths.SYSTEM_CONFIG.parent.mkdir(parents=True)
    bot.config.paths.SYSTEM_CONFIG.write_text('[ollama]\nmodel = "from-etc"\n')
    shown = shell.main("config", "show")
    assert f"config file: {bot.config.paths.SYSTEM_CONFIG}\n" in shown.out
    assert 'ollama.model = "from-etc"  (file)' in shown.out
    user = shell.home / ".config/lorebot/config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[ollama]\nmodel = "from-home"\n')
    assert 'ollama.model = "from-home"  (file)' in shell.main("config", "show").out


def test_under_systemd_state_and_written_skills_go_to_the_state_directory(shell: Shell) -> None:
    state = shell.root / "var-lib-lorebot"
    shell.setenv("STATE_DIRECTORY", str(state))
    shown = shell.main("config", "show")
    assert database_line(shown.out) == f'database.path = "{state}/lorebot.db"  (default)'
    assert f'skills.user_root = "{state}/skills"  (default)' in shown.out
    assert shell.main(*NOTE).code == 0
    assert (state / "lorebot.db").is_file()


def test_a_relative_database_path_is_printed_absolute(shell: Shell) -> None:
    shell.setenv("LOREBOT_DATABASE__PATH", "data/mine.db")
    shown = shell.main("config", "show")
    expected = shell.cwd / "data/mine.db"
    assert database_line(shown.out) == (
        f'database.path = "{expected}"  (environment: LOREBOT_DATABASE__PATH)'
    )
    result = shell.main("notes", "list")
    assert result.err == (
        f"lorebot: there is no lorebot database at {expected} (set by LOREBOT_DATABASE__PATH "
        "in the environment): to use another one, set LOREBOT_DATABASE__PATH or "
        "database.path in the config file\n"
    )


READERS = [
    ("notes", "list"),
    ("notes", "show", "channel:console/general", "staging-db"),
    ("notes", "search", "staging", "--scope", "channel:console/general"),
    ("notes", "history"),
    ("notes", "export", "exported"),
    ("proposals", "list"),
    ("actions", "list"),
    ("actions", "allowances"),
    ("jobs", "list"),
    ("backup", "backups"),
]


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_commands_that_read_create_no_database_and_say_where_they_looked(
    shell: Shell, argv: tuple[str, ...]
) -> None:
    before = shell.files()
    result = shell.main(*argv)
    database = shell.home / ".local/share/lorebot/lorebot.db"
    assert result.code == 1
    assert result.err == (
        f"lorebot: there is no lorebot database at {database} (the default): to use another "
        "one, set LOREBOT_DATABASE__PATH or database.path in the config file\n"
    )
    assert shell.files() == before


def test_doctor_and_skills_without_a_database_create_none(shell: Shell) -> None:
    shell.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # nothing listens there
    before = shell.files()
    doctor = shell.main("doctor")
    database = shell.home / ".local/share/lorebot/lorebot.db"
    assert f"✓ database: none yet at {database} (`lorebot chat` or `lorebot run` starts it" in (
        doctor.out
    )
    assert shell.main("skills", "list").code == 0
    assert shell.files() == before


def test_an_older_lorebot_db_in_the_working_folder_is_named_with_its_move(shell: Shell) -> None:
    old = shell.cwd / "lorebot.db"
    shell.setenv("LOREBOT_DATABASE__PATH", str(old))  # as an older lorebot made it
    assert shell.run(*NOTE).code == 0
    del shell.env["LOREBOT_DATABASE__PATH"]
    shell.monkeypatch.delenv("LOREBOT_DATABASE__PATH")

    chat = ("chat", "--user", "alice")  # would take a lock file beside the new database
    for argv in (("notes", "list"), NOTE, chat):  # reading, and commands that create one
        result = shell.run(*argv)
        assert result.code == 1 and len(result.err.splitlines()) == 1
        assert f"lorebot: {old} is from an older lorebot" in result.err
    assert not (shell.home / ".local/share").exists()

    move = re.search(r"move it with `([^`]+)`", result.err)
    assert move is not None
    subprocess.run(move.group(1), shell=True, check=True, cwd="/")
    assert shlex.split(move.group(1))[-1] == str(shell.home / ".local/share/lorebot/lorebot.db")
    listed = shell.run("notes", "list")
    assert listed.code == 0 and "staging-db" in listed.out and not old.exists()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def wal_and_shm_modes(database: Path) -> list[int]:
    """The modes of the WAL and shared-memory files while the database is open, as the
    running daemon holds it."""
    db = await SqliteDatabase.open(database)
    try:
        await db.checkpoint()
        return [mode(database.with_name(database.name + s)) for s in ("-wal", "-shm")]
    finally:
        await db.close()


def test_database_wal_and_backup_files_are_readable_by_their_owner_only(shell: Shell) -> None:
    previous = os.umask(0o022)  # the usual umask, which would leave them world-readable
    try:
        assert shell.main(*NOTE).code == 0
        database = shell.home / ".local/share/lorebot/lorebot.db"
        assert mode(database) == 0o600
        assert asyncio.run(wal_and_shm_modes(database)) == [0o600, 0o600]
        backups = shell.root / "backups"
        backups.mkdir()
        assert shell.main("backup", str(backups)).code == 0
        written = list(backups.iterdir())
        assert written and all(mode(path) == 0o600 for path in written)
    finally:
        os.umask(previous)
