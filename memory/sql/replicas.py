"""The running lorebot processes of a database (`memory.stores.replicas`): on PostgreSQL its
replicas, on SQLite the one daemon."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.sql.session import SqlDatabase
from memory.stores.replicas import FORGET_AFTER, Replica


class SqlReplicas:
    """The `replicas` table."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self.time = db.dialect.time

    async def beat(self, replica: Replica) -> None:
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO replicas (id, host, pid, role, started_at, heartbeat_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "role = excluded.role, heartbeat_at = excluded.heartbeat_at",
                (
                    replica.id,
                    replica.host,
                    replica.pid,
                    replica.role,
                    self.time(replica.started_at),
                    self.time(replica.heartbeat_at),
                ),
            )
            await sql.run(
                "DELETE FROM replicas WHERE heartbeat_at < ?",
                (self.time(replica.heartbeat_at - FORGET_AFTER),),
            )

    async def leave(self, replica_id: str) -> None:
        async with self.db.transaction() as sql:
            await sql.run("DELETE FROM replicas WHERE id = ?", (replica_id,))

    async def fetch_all(self) -> list[Replica]:
        async with self.db.reading() as sql:
            found = await sql.rows(
                "SELECT id, host, pid, role, started_at, heartbeat_at FROM replicas "
                "ORDER BY role = 'standby', started_at, id"
            )
        return [
            Replica(
                row["id"],
                row["host"],
                int(row["pid"]),
                row["role"],
                self._moment(row["started_at"]),
                self._moment(row["heartbeat_at"]),
            )
            for row in found
        ]

    def _moment(self, value: Any) -> datetime:
        moment = self.db.dialect.read_time(value)
        assert moment is not None  # the columns are NOT NULL
        return moment
