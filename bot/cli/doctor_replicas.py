"""`lorebot doctor`'s replicas: every running lorebot of the database, with its role, start
time and latest heartbeat (a replica that stopped beating is shown as lost)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from adapters.diagnosis import Finding as Check

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from memory.stores.replicas import Replica


async def fetch_replicas(settings: Settings) -> list[Replica] | None:
    """The replicas the PostgreSQL database lists (none when it cannot be read: the
    database check says why); None on SQLite, whose one daemon the file's lock stands for."""
    from bot.storage import engine_for, open_memory
    from memory import StoreError

    if not engine_for(settings).shared:
        return None
    try:
        memory = await open_memory(settings, create=False, prepare=False)
    except StoreError:
        return []
    try:
        return await memory.replicas.fetch_all()
    except StoreError:
        return []  # a database from before replicas were kept
    finally:
        await memory.close()


def replica_checks(replicas: list[Replica] | None, now: datetime) -> list[Check]:
    """One line per replica; a lost one is said, not failed (it is forgotten in a day)."""
    if replicas is None:
        return []
    if not replicas:
        return [Check(True, "replicas", "none running")]
    checks = []
    for replica in replicas:
        ago = (now - replica.heartbeat_at).total_seconds()
        since = replica.started_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        state = f"lost: no heartbeat for {ago:.0f} s" if replica.lost(now) else replica.role
        detail = f"{state}, started {since}, last heartbeat {ago:.0f} s ago"
        checks.append(Check(True, f"replica {replica.id}", detail))
    return checks


def replicas_json(replicas: list[Replica] | None, now: datetime) -> list[dict[str, Any]]:
    """The replicas as `doctor --json` lists them."""
    return (
        []
        if replicas is None
        else [
            {
                "id": r.id,
                "host": r.host,
                "pid": r.pid,
                "role": r.role,
                "started_at": r.started_at.isoformat(),
                "heartbeat_at": r.heartbeat_at.isoformat(),
                "lost": r.lost(now),
            }
            for r in replicas
        ]
    )
