"""PostgreSQL's side of the neutral SQL (`memory.sql.session`): its dialect and its
sessions, which turn the neutral `?` placeholders into psycopg's."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from memory.clock import to_utc_text
from memory.sql.session import Params, Result, Row, Statement

Connection = psycopg.AsyncConnection[dict[str, Any]]


def utc(value: datetime | None) -> datetime | None:
    """A `timestamptz` as read (in the session's time zone) as UTC, as lorebot keeps times."""
    return None if value is None else value.astimezone(UTC)


class PostgresDialect:
    name = "postgresql"

    def time(self, moment: datetime) -> datetime:
        return moment

    def read_time(self, value: Any) -> datetime | None:
        return utc(value)

    def json_text(self, column: str, key: str) -> str:
        assert key.isidentifier(), key
        return f"({column}::jsonb ->> '{key}')"

    def lock_rows(self, alias: str) -> str:
        return f"FOR UPDATE OF {alias}"

    def share_rows(self, alias: str) -> str:
        return f"FOR SHARE OF {alias}"

    def time_text(self, value: Any) -> str:
        return to_utc_text(value)

    def written_here(self, alias: str) -> str:
        return f"{alias}.xmin = pg_current_xact_id()::xid"


POSTGRESQL = PostgresDialect()


@functools.lru_cache(maxsize=1024)
def psycopg_sql(sql: str) -> str:
    """Neutral SQL in psycopg's placeholders (a literal `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


@dataclass(frozen=True, slots=True)
class PostgresSession:
    """Neutral SQL on one pooled psycopg connection."""

    conn: Connection

    @property
    def dialect(self) -> PostgresDialect:
        return POSTGRESQL

    async def rows(self, sql: str, params: Params = ()) -> list[Row]:
        cursor = await self.conn.execute(psycopg_sql(sql), params)
        return list(await cursor.fetchall())

    async def row(self, sql: str, params: Params = ()) -> Row | None:
        cursor = await self.conn.execute(psycopg_sql(sql), params)
        return await cursor.fetchone()

    async def run(self, sql: str, params: Params = ()) -> int:
        cursor = await self.conn.execute(psycopg_sql(sql), params)
        return cursor.rowcount

    async def run_many(self, sql: str, params: Iterable[Params]) -> None:
        async with self.conn.cursor() as cursor:
            await cursor.executemany(psycopg_sql(sql), params)

    async def insert(self, sql: str, params: Params) -> int:
        cursor = await self.conn.execute(psycopg_sql(sql + " RETURNING id"), params)
        row = await cursor.fetchone()
        assert row is not None
        return int(row["id"])

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        return await send_together(self.conn, statements)


async def send_together(conn: Connection, statements: Sequence[Statement]) -> list[Result]:
    """Run statements in psycopg's pipeline mode: sent at once, answered at once. Outside a
    transaction they are one implicit transaction (the server runs what comes before a
    Sync as one): a failure rolls back those before it."""
    async with conn.pipeline():
        cursors = [await conn.execute(psycopg_sql(s.sql), s.params) for s in statements]
    results = []
    for cursor in cursors:
        rows: list[Row] = list(await cursor.fetchall()) if cursor.description else []
        results.append(Result(rows, cursor.rowcount))
    return results


@dataclass(frozen=True, slots=True)
class PostgresTransaction(PostgresSession):
    """PostgreSQL's `Transaction`: one pooled connection, inside BEGIN … COMMIT."""


def session_of(tx: object) -> PostgresTransaction:
    """The session of a PostgreSQL transaction; `TypeError` for another engine's."""
    if not isinstance(tx, PostgresTransaction):
        raise TypeError(
            f"a PostgreSQL store was given {type(tx).__name__}, not a PostgreSQL transaction"
        )
    return tx
