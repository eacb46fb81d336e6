"""The running lorebot processes of a PostgreSQL database: its replicas (`memory.replicas`)."""

from __future__ import annotations

from datetime import UTC

from memory.postgres.database import PostgresDatabase
from memory.replicas import FORGET_AFTER, Replica


class PostgresReplicas:
    """The `replicas` table."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def beat(self, replica: Replica) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO replicas (id, host, pid, role, started_at, heartbeat_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "role = excluded.role, heartbeat_at = excluded.heartbeat_at",
                (replica.id, replica.host, replica.pid, replica.role, replica.started_at,
                 replica.heartbeat_at),
            )  # fmt: skip
            await conn.execute(
                "DELETE FROM replicas WHERE heartbeat_at < %s",
                (replica.heartbeat_at - FORGET_AFTER,),
            )

    async def leave(self, replica_id: str) -> None:
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM replicas WHERE id = %s", (replica_id,))

    async def fetch_all(self) -> list[Replica]:
        found = await self.db.rows(
            "SELECT id, host, pid, role, started_at, heartbeat_at FROM replicas "
            "ORDER BY role = 'standby', started_at, id"
        )
        return [
            Replica(r["id"], r["host"], int(r["pid"]), r["role"],
                    r["started_at"].astimezone(UTC), r["heartbeat_at"].astimezone(UTC))
            for r in found
        ]  # fmt: skip
