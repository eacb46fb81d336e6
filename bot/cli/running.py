"""Whether a lorebot daemon runs on the configured database: on SQLite, the database file's
lock is held by another process; on PostgreSQL, a replica has written its heartbeat lately."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.clock import utc_now

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from memory.stores.stores import Stores


async def daemon_running(settings: Settings, stores: Stores) -> bool:
    from bot.daemon.lockfile import DatabaseLock
    from bot.storage import engine_for

    if not engine_for(settings).shared:
        return DatabaseLock(settings.database.path).held_elsewhere()
    now = utc_now()
    return any(not replica.lost(now) for replica in await stores.replicas.fetch_all())
