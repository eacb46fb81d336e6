"""A migration does what it did on the day it was written: the migrations import no live
code of lorebot's that could change what an old database's upgrade does."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from memory import NoteDraft, Scope
from memory.sqlite import driver
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from memory.sqlite.notes import SqliteNoteStore
from tests.support.migrations import lorebot_imports
from tests.support.paths import ROOT

# The scrubber is taken live on purpose: a newer one only ever hides more.
ALLOWED = {"memory.policy.redaction"}
ENGINE = ROOT / "memory" / "sqlite"
# The migrations' own modules, as frozen as they are: one per migration, and their list.
OWN = "memory.sqlite.migration_steps"
PACKAGE = sorted((ENGINE / "migration_steps").glob("*.py"))


def test_each_migration_is_a_module_of_its_own() -> None:
    steps = [path.name[:5] for path in PACKAGE if path.name != "__init__.py"]
    assert steps == [f"m{number:03}_" for number in range(1, SCHEMA_VERSION + 1)]


def test_the_migrations_import_no_live_code_but_the_scrubber() -> None:
    ours = lorebot_imports([ENGINE / "migrations.py", *PACKAGE], OWN)
    assert ours <= ALLOWED, f"migrations call live code: {sorted(ours - ALLOWED)}"


# The SQL of each migration as it was written (sha256, first 16 hex digits); the Python
# step of 12 is held by the rule above. A new migration adds its line here.
WRITTEN = (
    "001cfe060df5434e",
    "3b11198e00c9de0a",
    "3b726d20199c7b88",
    "59337078bccde25e",
    "8fdf2d7a81c73981",
    "41e1f6cf51a7a883",
    "5081d4643153af6e",
    "e1e368eadf68af71",
    "0266483bbff7c8e8",
    "d203822ac1e7c159",
    "c6dc5b807d2d27cf",
    "redact_stored_messages",
    "ddc33514d6435fbb",
    "257cce1c25796c8c",
    "cf5249f6d8b69ad5",
    "85fe19e6468e1243",
    "4904beb83a15eb86",
    "a3e3d63bdb0d295b",
    "912509ee18acc76e",
    "5443fa40206cc04f",
    "74adaf176998edb3",
    "09429ba33336449e",
    "83f0dfab7ebde179",
)


def test_no_migration_written_is_changed_and_the_schema_version_counts_them() -> None:
    found = tuple(
        hashlib.sha256(step.encode()).hexdigest()[:16] if isinstance(step, str) else step.__name__
        for step in MIGRATIONS
    )
    assert found[: len(WRITTEN)] == WRITTEN, "a migration already written was changed"
    assert len(found) == len(WRITTEN), "a new migration: add its line to WRITTEN"
    assert SCHEMA_VERSION == len(MIGRATIONS) == 23


async def test_migration_17_keeps_every_change_set_and_its_reverts(tmp_path: Path) -> None:
    """Rebuilding `note_changes` (to take changes of many notes) keeps each row as it was,
    and `reverted_by` still points into the rebuilt table."""
    path = tmp_path / "v16.db"
    with closing(sqlite3.connect(path)) as conn:
        for step in MIGRATIONS[:16]:
            if isinstance(step, str):  # 12 only rewrites stored messages: there are none
                conn.executescript(step)
        conn.executescript(
            "INSERT INTO note_changes (id, scope, topic, action, after_json, actor, created_at)"
            " VALUES (1, 'channel:slack/C1', 'vpn', 'create', '{\"summary\":\"vpn-1\"}', 'a', "
            "'2026-11-01T09:00:00.000000Z'), (2, 'channel:slack/C1', 'vpn', 'update', NULL, "
            "'a', '2026-11-01T09:01:00.000000Z');"
            "UPDATE note_changes SET reverted_by = 2 WHERE id = 1; PRAGMA user_version = 16;"
        )
        rows_16 = conn.execute("SELECT * FROM note_changes ORDER BY id").fetchall()
    db = await SqliteDatabase.open(path)
    try:
        async with db.conn.execute("SELECT * FROM note_changes ORDER BY id") as cursor:
            assert [tuple(row) for row in await cursor.fetchall()] == rows_16
        async with db.conn.execute("PRAGMA foreign_key_check") as cursor:
            assert await cursor.fetchall() == []
        store = SqliteNoteStore(db)
        assert (await store.fetch_change(1)).reverted_by == 2
        imported = await store.import_drafts(
            [NoteDraft(Scope.parse("channel:slack/C1"), "vpn", "vpn-3")], actor="a"
        )
        assert imported.change_id == 3
        with pytest.raises(driver.DatabaseError, match="FOREIGN KEY"):
            await db.conn.execute("UPDATE note_changes SET reverted_by = 99 WHERE id = 3")
    finally:
        await db.close()
