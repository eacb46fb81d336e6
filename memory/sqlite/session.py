"""SQLite's side of the neutral SQL (`memory.sql.session`): its dialect and its sessions."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import aiosqlite

from memory.clock import from_utc_text, to_utc_text
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

    def written_here(self, alias: str) -> str:
        return "1"


SQLITE = SqliteDialect()


@dataclass(frozen=True, slots=True)
class SqliteSession:
    """Neutral SQL on one aiosqlite connection."""

    conn: aiosqlite.Connection

    @property
    def dialect(self) -> SqliteDialect:
        return SQLITE

    # Each statement is one hop to the connection's thread (execute and fetch together),
    # not aiosqlite's three (execute, fetch, close).
    async def rows(self, sql: str, params: Params = ()) -> list[Row]:
        return await self._on_thread(sql, params, _ALL_ROWS)

    async def row(self, sql: str, params: Params = ()) -> Row | None:
        return await self._on_thread(sql, params, _FIRST_ROW)

    async def run(self, sql: str, params: Params = ()) -> int:
        return await self._on_thread(sql, params, _CHANGED)

    async def run_many(self, sql: str, params: Iterable[Params]) -> None:
        await self.conn.executemany(sql, params)

    async def insert(self, sql: str, params: Params) -> int:
        new_id = await self._on_thread(sql, params, _NEW_ID)
        assert new_id is not None
        return new_id

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        return await driver.in_thread(self.conn, functools.partial(run_all, statements))

    async def _on_thread(self, sql: str, params: Params, read: Callable[[Any], T]) -> T:
        return await driver.in_thread(self.conn, functools.partial(_run_one, sql, params, read))


T = TypeVar("T")
_ALL_ROWS: Callable[[Any], list[Row]] = operator.methodcaller("fetchall")
_FIRST_ROW: Callable[[Any], Row | None] = operator.methodcaller("fetchone")
_CHANGED: Callable[[Any], int] = operator.attrgetter("rowcount")
_NEW_ID: Callable[[Any], int | None] = operator.attrgetter("lastrowid")


def _run_one(sql: str, params: Params, read: Callable[[Any], T], raw: Any) -> T:
    """Run one statement on a raw connection (on its thread) and `read` its cursor."""
    cursor = raw.execute(sql, params)
    try:
        return read(cursor)
    finally:
        cursor.close()


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


def session_of(tx: object) -> SqliteTransaction:
    """The session of a SQLite transaction; `TypeError` for another engine's."""
    if not isinstance(tx, SqliteTransaction):
        raise TypeError(f"a SQLite store was given {type(tx).__name__}, not a SQLite transaction")
    return tx
