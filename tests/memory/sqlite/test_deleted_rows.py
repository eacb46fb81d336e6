"""What SQLite deletes is gone from the file and from its backups: lorebot overwrites a
deleted row (`secure_delete`), and a backup copies the rows alone, not the free space
where a database written before that still keeps what was deleted."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from memory.sql.live_replies import SqlLiveReplies
from memory.sqlite import driver
from memory.sqlite.database import SqliteDatabase

SHOWN = "the reply so far, with its Q7x-unmistakable-words"


async def test_a_deleted_row_leaves_nothing_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lorebot.db"
    db = await SqliteDatabase.open(path)
    try:
        replies = SqlLiveReplies(db)
        await replies.record("test", {"channel_id": "C1"}, "m1", SHOWN)
        await replies.record("test", {"channel_id": "C1"}, "m2", "another reply")
        await replies.done("test", "m1")
        assert await db.checkpoint()
        kept = path.read_bytes()
    finally:
        await db.close()
    assert b"another reply" in kept and b"Q7x-unmistakable" not in kept


async def test_a_backup_leaves_out_what_an_older_lorebot_deleted(tmp_path: Path) -> None:
    path = tmp_path / "lorebot.db"
    await (await SqliteDatabase.open(path)).close()
    # Deleted without secure_delete, as a lorebot before it did: the row stays in the
    # file's free space.
    with closing(driver.sqlite_module().connect(path, isolation_level=None)) as older:
        older.execute("PRAGMA secure_delete = OFF")
        older.execute(
            "INSERT INTO live_replies (platform, conversation_json, message_id, shown, "
            "updated_at) VALUES ('test', '{}', 'm1', ?, '2026-01-01T00:00:00.000000Z')",
            (SHOWN,),
        )
        older.execute("DELETE FROM live_replies")
    assert b"Q7x-unmistakable" in path.read_bytes()

    db = await SqliteDatabase.open(path)
    try:
        await db.backup_to(tmp_path / "backup.db")
    finally:
        await db.close()
    backup = tmp_path / "backup.db"
    assert b"Q7x-unmistakable" not in backup.read_bytes()
    copy = await SqliteDatabase.open(backup)
    try:  # a whole database, restorable as it is
        assert await copy.fetch_integrity() == "ok"
        assert await copy.fetch_schema_version() == schema_version(path)
    finally:
        await copy.close()


def schema_version(path: Path) -> int:
    with closing(driver.sqlite_module().connect(path)) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
