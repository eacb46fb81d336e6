"""SQLite's side of the neutral SQL (`memory.sql.session`): its dialect and its sessions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from memory.clock import from_utc_text, to_utc_text
from memory.database import Transaction
from memory.sql.session import Params, Row


class SqliteDialect:
    name = "sqlite"

    # SQLite keeps times as fixed-width UTC text, so SQL compares them as strings.
    def time(self, moment: datetime) -> str:
        return to_utc_text(moment)

    def read_time(self, value: Any) -> datetime | None:
        return from_utc_text(value)

    def json_text(self, column: str, key: str) -> str:
        assert key.isidentifier(), key
        return f"json_extract({column}, '$.{key}')"

    def lock_rows(self, alias: str) -> str:
        return ""

    def share_rows(self, alias: str) -> str:
        return ""


SQLITE = SqliteDialect()


@dataclass(frozen=True, slots=True)
class SqliteSession:
    """Neutral SQL on one aiosqlite connection."""

    conn: aiosqlite.Connection

    @property
    def dialect(self) -> SqliteDialect:
        return SQLITE

    async def rows(self, sql: str, params: Params = ()) -> list[Row]:
        async with self.conn.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def row(self, sql: str, params: Params = ()) -> Row | None:
        async with self.conn.execute(sql, params) as cursor:
            found: Row | None = await cursor.fetchone()
            return found

    async def run(self, sql: str, params: Params = ()) -> int:
        async with self.conn.execute(sql, params) as cursor:
            return cursor.rowcount

    async def run_many(self, sql: str, params: Iterable[Params]) -> None:
        await self.conn.executemany(sql, params)

    async def insert(self, sql: str, params: Params) -> int:
        async with self.conn.execute(sql, params) as cursor:
            assert cursor.lastrowid is not None
            return cursor.lastrowid


@dataclass(frozen=True, slots=True)
class SqliteTransaction(SqliteSession):
    """SQLite's `Transaction`: the connection, inside BEGIN IMMEDIATE … COMMIT."""


def connection_of(tx: Transaction) -> aiosqlite.Connection:
    """The connection of a SQLite transaction; `TypeError` for another engine's."""
    return session_of(tx).conn


def session_of(tx: object) -> SqliteTransaction:
    """The session of a SQLite transaction; `TypeError` for another engine's."""
    if not isinstance(tx, SqliteTransaction):
        raise TypeError(f"a SQLite store was given {type(tx).__name__}, not a SQLite transaction")
    return tx
