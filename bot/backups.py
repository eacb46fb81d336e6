"""Dated backup files in a backup folder: their names, and pruning the oldest of them."""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path

_log = logging.getLogger(__name__)

# The names lorebot gives its own backups: daily ones from the maintenance job and
# timestamped ones from `lorebot backup FOLDER`. Both sort by name in time order.
_DATED = re.compile(r"lorebot-\d{4}-\d{2}-\d{2}(T\d{6}Z)?\.db")


def daily_name(day: datetime) -> str:
    """The file name of the maintenance job's backup of `day`."""
    return f"lorebot-{day:%Y-%m-%d}.db"


def stamped_name(moment: datetime) -> str:
    """The file name of a backup taken on request at `moment` (a UTC time)."""
    return f"lorebot-{moment:%Y-%m-%dT%H%M%SZ}.db"


def dated_backups(folder: Path) -> list[Path]:
    """The backups lorebot wrote in `folder`, oldest first; other files are not listed."""
    return sorted(
        (p for p in folder.iterdir() if _DATED.fullmatch(p.name) and p.is_file()),
        key=lambda p: p.name,
    )


def prune(folder: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` dated backups in `folder`; the deleted paths."""
    old = dated_backups(folder)[:-keep] if keep > 0 else dated_backups(folder)
    for path in old:
        path.unlink(missing_ok=True)
        _log.info("deleted the old backup %s", path)
    return old
