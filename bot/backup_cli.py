"""`lorebot backup DEST` (online, safe while running) and `lorebot restore SRC`."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from bot.config import Settings
from bot.errors import UserError
from bot.lockfile import DatabaseLock
from memory import Database, driver
from memory.migrations import SCHEMA_VERSION


def add_parsers(commands: Any) -> None:
    p = commands.add_parser("backup", help="copy the database while lorebot runs")
    p.add_argument("dest", type=Path, metavar="DEST", help="a file, or a folder for a dated file")
    p.set_defaults(command=cmd_backup)
    p = commands.add_parser("restore", help="replace the database with a backup (lorebot stopped)")
    p.add_argument("source", type=Path, metavar="SRC", help="a backup file that `backup` wrote")
    p.set_defaults(command=cmd_restore)


def _backup_target(database: Path, dest: Path) -> Path:
    if not database.exists():
        raise UserError(f"there is no database at {database} to back up")
    return dest / f"{database.stem}-backup.db" if dest.is_dir() else dest


async def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    dest = _backup_target(settings.database.path, args.dest)
    db = await Database.open(settings.database.path)
    try:
        await db.backup_to(dest)
    finally:
        await db.close()
    print(f"backed up {settings.database.path} to {dest}")
    return 0


def _check_backup(source: Path) -> int:
    """The schema version of a readable, intact lorebot database; UserError otherwise."""
    if not source.is_file():
        raise UserError(f"{source} does not exist")
    try:
        with driver.sqlite_module().connect(f"file:{source}?mode=ro", uri=True) as conn:
            driver.load_vec(conn)  # vector tables are checked too when present
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
            conn.execute("SELECT count(*) FROM notes").fetchone()
    except driver.DatabaseError as exc:
        raise UserError(f"{source} is not a lorebot database: {exc}") from None
    if integrity != "ok":
        raise UserError(f"{source} is damaged: {integrity}")
    if version > SCHEMA_VERSION:
        raise UserError(f"{source} comes from a newer lorebot (schema {version}); upgrade first")
    return int(version)


async def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    target = settings.database.path
    if DatabaseLock(target).held_elsewhere():
        raise UserError(f"lorebot is running on {target}: stop it before restoring")
    version = _check_backup(args.source)
    if target.exists():
        kept = target.with_name(target.name + ".before-restore")
        db = await Database.open(target)
        try:
            await db.backup_to(kept)
        finally:
            await db.close()
        print(f"kept the current database as {kept}")
    partial = target.with_name(target.name + ".restoring")
    shutil.copyfile(args.source, partial)
    for suffix in ("-wal", "-shm"):
        target.with_name(target.name + suffix).unlink(missing_ok=True)
    partial.replace(target)
    print(f"restored {args.source} (schema {version}) to {target}")
    return 0
