"""The running lorebot processes of a SQLite database: the one daemon (`memory.replicas`)."""

from __future__ import annotations

from datetime import datetime

from memory.clock import from_utc_text
from memory.replicas import FORGET_AFTER, Replica
from memory.sqlite.database import SqliteDatabase, to_db_time


class SqliteReplicas:
    """The `replicas` table."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def beat(self, replica: Replica) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO replicas (id, host, pid, role, started_at, heartbeat_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET role = excluded.role, "
                "heartbeat_at = excluded.heartbeat_at",
                (replica.id, replica.host, replica.pid, replica.role,
                 to_db_time(replica.started_at), to_db_time(replica.heartbeat_at)),
            )  # fmt: skip
            await conn.execute(
                "DELETE FROM replicas WHERE heartbeat_at < ?",
                (to_db_time(replica.heartbeat_at - FORGET_AFTER),),
            )

    async def leave(self, replica_id: str) -> None:
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM replicas WHERE id = ?", (replica_id,))

    async def fetch_all(self) -> list[Replica]:
        async with self.db.conn.execute(
            "SELECT id, host, pid, role, started_at, heartbeat_at FROM replicas "
            "ORDER BY role = 'standby', started_at, id"
        ) as cursor:
            return [
                Replica(r[0], r[1], int(r[2]), r[3], _time(r[4]), _time(r[5]))
                for r in await cursor.fetchall()
            ]


def _time(text: str) -> datetime:
    moment = from_utc_text(text)
    assert moment is not None
    return moment
