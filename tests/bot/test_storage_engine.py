"""The engine the settings choose (`bot.storage.engine_for`), which the daemon and every
command ask instead of reading the database URL: SQLite at `database.path` for one
daemon, backed up by lorebot; PostgreSQL at `database.url`, shared by replicas, named
without its password, backed up by its own tools; and a clear error when its driver is
missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.config.settings import Settings
from bot.config.snapshot import SettingsSnapshot
from bot.errors import UserError
from bot.storage import PostgresEngine, SqliteEngine, engine_for
from memory.stores.stores import StoreOptions

PASSWORD = "s3cr3t-Pw9"
URL = f"postgresql://lore:{PASSWORD}@127.0.0.1:5432/lore"


def test_without_a_url_the_memory_is_one_sqlite_file_lorebot_backs_up(tmp_path: Path) -> None:
    path = tmp_path / "lorebot.db"
    settings = Settings(database={"path": path})
    for engine in (engine_for(settings), engine_for(SettingsSnapshot.of(settings))):
        assert isinstance(engine, SqliteEngine)
        assert (engine.kind, engine.shared, engine.label) == ("sqlite", False, str(path))
        assert engine.backup_advice(tmp_path / "copy.db") is None
        assert not engine.may_exist()
    path.touch()
    assert engine_for(settings).may_exist()


def test_a_url_is_postgresql_shared_named_and_backed_up_without_its_password(
    tmp_path: Path,
) -> None:
    engine = engine_for(Settings(database={"path": tmp_path / "x.db", "url": URL}))
    assert isinstance(engine, PostgresEngine)
    assert (engine.kind, engine.shared) == ("postgresql", True)
    assert engine.label.startswith("postgresql://lore:") and PASSWORD not in engine.label
    advice = engine.backup_advice(tmp_path / "lorebot.dump")
    assert "pg_dump" in advice and PASSWORD not in advice


async def test_a_missing_postgresql_driver_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("memory.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` fails
    engine = engine_for(Settings(database={"path": tmp_path / "x.db", "url": URL}))
    with pytest.raises(UserError, match=r"pip install 'lorebot\[postgresql\]'"):
        await engine.open_stores(StoreOptions(), embedder=None, create=False)
    with pytest.raises(UserError, match="driver is not installed"):
        await engine.open_database()
