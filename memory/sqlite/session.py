"""SQLite's side of the neutral SQL (`memory.sql.session`): its dialect and its sessions."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from memory.clock import from_utc_text, to_utc_text
from memory.database import Transaction
from memory.sql.session import Params, Result, Row, Statement
from memory.sqlite import driver


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

    def time_text(self, value: Any) -> str:
        return str(value)


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

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        return await driver.in_thread(self.conn, functools.partial(run_all, statements))


def run_all(statements: Sequence[Statement], raw: Any) -> list[Result]:
    """Run statements in order on a raw connection (on its thread)."""
    results = []
    for statement in statements:
        cursor = raw.execute(statement.sql, statement.params)
        try:
            results.append(Result(cursor.fetchall(), cursor.rowcount))
        finally:
            cursor.close()
    return results


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
