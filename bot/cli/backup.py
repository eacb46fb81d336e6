"""`lorebot backup DEST` (online, safe while running) and `lorebot restore SRC`."""

from __future__ import annotations

import argparse
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from bot import backups
from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.settings import Settings


def add_parsers(commands: Any) -> None:
    p = commands.add_parser("backup", help="copy the database while lorebot runs")
    p.add_argument(
        "dest",
        metavar="DEST",
        help="a file, or a folder (existing, or created when DEST ends in /) for a dated "
        "file; a folder keeps the newest jobs.backup_keep dated backups",
    )
    p.add_argument("--force", action="store_true", help="replace a file that is there already")
    p.set_defaults(command=cmd_backup)
    p = commands.add_parser("restore", help="replace the database with a backup (lorebot stopped)")
    p.add_argument("source", type=Path, metavar="SRC", help="a backup file that `backup` wrote")
    p.set_defaults(command=cmd_restore)


class BackupTarget(NamedTuple):
    """Where a backup goes, and the folder to prune when it is a dated file in a folder."""

    path: Path
    folder: Path | None


def _backup_target(database: Path, dest: str, now: datetime) -> BackupTarget:
    if not database.exists():
        raise UserError(f"there is no database at {database} to back up")
    path = Path(dest)
    if path.is_dir() or dest.endswith(os.sep):
        return BackupTarget(path / backups.stamped_name(now), path)
    return BackupTarget(path, None)


def _make_folder(target: BackupTarget) -> None:
    """Create the folder DEST names with its trailing /, and its parents, as the
    maintenance job does for `jobs.backup_dir`; its owner alone may read it."""
    if target.folder is None or target.folder.exists():
        return  # what is there already is checked by `_check_writable`
    try:
        target.folder.mkdir(mode=0o700, parents=True)
    except OSError as exc:
        raise _cannot_write(target.path, _reason(exc)) from None


def _check_writable(target: Path, database: Path, *, force: bool) -> None:
    """A UserError naming what is wrong when `target` cannot become a backup file, or
    would replace a file without `force`."""
    parent = target.parent
    if not parent.exists():
        raise _cannot_write(target, f"the folder {parent} does not exist")
    if not parent.is_dir():
        raise _cannot_write(target, f"{parent} is not a folder")
    if target.is_dir():
        raise _cannot_write(target, "it is a folder")
    if target.exists() and target.resolve() == database.resolve():
        raise _cannot_write(target, "it is the database itself")
    if (target.exists() or target.is_symlink()) and not force:
        raise UserError(f"{target} exists: add --force to replace it")


def _cannot_write(target: Path, reason: str) -> UserError:
    return UserError(f"cannot write the backup to {target}: {reason}")


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


async def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    from bot.storage import engine_for, open_database

    dest = Path(args.dest)
    folder = args.dest.endswith(os.sep) or os.path.isdir(dest)  # noqa: ASYNC240 (a stat)
    advice = engine_for(settings).backup_advice(dest / "lorebot.dump" if folder else dest)
    if advice is not None:  # the engine is backed up by its own tools
        raise UserError(advice)
    database = settings.database.path
    target = _backup_target(database, args.dest, datetime.now(UTC))
    _make_folder(target)
    _check_writable(target.path, database, force=args.force)
    db = await open_database(database)
    try:
        await db.backup_to(target.path)
    except OSError as exc:
        raise _cannot_write(target.path, _reason(exc)) from None
    finally:
        await db.close()
    print(f"backed up {database} to {target.path}")
    if target.folder is not None:
        keep = settings.jobs.backup_keep
        if removed := backups.prune(target.folder, keep):
            noun = "backup" if len(removed) == 1 else "backups"
            print(f"removed {len(removed)} older {noun} (jobs.backup_keep = {keep})")
    return 0


def _check_backup(source: Path) -> int:
    """The schema version of a readable, intact lorebot database; UserError otherwise."""
    from bot.storage import inspect_backup, known_schema
    from memory import StoreError

    if not source.is_file():
        raise UserError(f"{source} does not exist")
    try:
        health = inspect_backup(source)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    if health.integrity != "ok":
        raise UserError(f"{source} is damaged: {health.integrity}")
    if health.schema > known_schema():
        raise UserError(
            f"{source} comes from a newer lorebot (schema {health.schema}); upgrade first"
        )
    return health.schema


async def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    from bot.daemon.lockfile import DatabaseLock
    from bot.storage import engine_for, open_database

    advice = engine_for(settings).backup_advice(Path(args.source))
    if advice is not None:
        raise UserError(advice)

    target = settings.database.path
    if DatabaseLock(target).held_elsewhere():
        raise UserError(f"lorebot is running on {target}: stop it before restoring")
    version = _check_backup(args.source)
    if target.exists():
        kept = target.with_name(target.name + ".before-restore")
        db = await open_database(target)
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
