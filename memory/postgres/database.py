"""The PostgreSQL database: a psycopg connection pool, migrations under an advisory lock,
transactions, and what `doctor` shows of the server.

psycopg 3 rather than asyncpg: it is libpq itself, so the URL, the PG… variables,
PGPASSFILE, service files and TLS settings behave as every other PostgreSQL tool does;
one API serves async and sync code; and COPY is first-class, for imports and copies.
"""

from __future__ import annotations

import asyncio
import logging
import select
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memory.errors import SchemaTooNew, StoreError, StoreUnavailable
from memory.policy.conninfo import read_conninfo
from memory.postgres.migrations import SCHEMA_VERSION, steps_after
from memory.postgres.session import (
    POSTGRESQL,
    PostgresDialect,
    PostgresSession,
    send_together,
    session_of,
)
from memory.postgres.session import Connection as Connection
from memory.postgres.session import PostgresTransaction as PostgresTransaction
from memory.postgres.session import utc as utc
from memory.postgres.text_dumpers import ADAPTERS
from memory.sql.session import Result, Statement
from memory.stores.database import Health

_log = logging.getLogger(__name__)

# Held for the migrations, so replicas starting together migrate once.
MIGRATION_LOCK = 0x6C6F7265  # "lore"
CONNECT_TIMEOUT_S = 10.0


def shown_url(url: str) -> str:
    """The URL with its password masked (in every form libpq takes), as logs and `doctor`
    show it."""
    return read_conninfo(url).shown


class PostgresDatabase:
    """A pool of connections to one PostgreSQL database holding lorebot's schema."""

    def __init__(self, pool: AsyncConnectionPool[Connection], url: str) -> None:
        self.pool = pool
        self.url = url
        self.server_version = ""
        self.extensions: dict[str, str] = {}
        self._closed = False
        self._deferred: list[Statement] = []

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        pool_size: int = 5,
        create: bool = True,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> PostgresDatabase:
        """Connect, then create or migrate lorebot's schema (unless not `create`, which
        refuses a database without one). A newer schema is refused and left untouched."""
        # One connection first: a server that is down or refuses lorebot is said at once,
        # in libpq's words, rather than by the pool retrying until its timeout. A URL
        # libpq would quote a password of in its error is refused in lorebot's words.
        conninfo = read_conninfo(url)
        if conninfo.problem is not None:
            raise StoreUnavailable(f"cannot use PostgreSQL at {conninfo.shown}: {conninfo.problem}")
        try:
            first = await psycopg.AsyncConnection.connect(
                url, connect_timeout=max(1, round(connect_timeout_s))
            )
        except psycopg.Error as exc:
            said = conninfo.scrub(_first_line(exc))
            raise StoreUnavailable(f"cannot reach PostgreSQL at {conninfo.shown}: {said}") from None
        await first.close()
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            open=False,
            # `ADAPTERS`: strings go out as every engine keeps text (a NUL as U+FFFD).
            kwargs={"row_factory": dict_row, "autocommit": True, "context": ADAPTERS},
            # A connection the server dropped (a restart) is replaced, not handed out.
            check=check_if_disturbed,
            name="lorebot",
        )
        try:
            await pool.open(wait=True, timeout=connect_timeout_s)
        except PoolTimeout as exc:
            await pool.close()
            raise StoreUnavailable(
                f"cannot reach PostgreSQL at {shown_url(url)} within {connect_timeout_s:g} s"
            ) from exc
        db = cls(pool, url)
        try:
            await db._prepare(create)
        except BaseException:
            await pool.close()
            raise
        return db

    async def _prepare(self, create: bool) -> None:
        async with self.pool.connection() as conn:
            self.server_version = str((await _one(conn, "SHOW server_version"))["server_version"])
            self.extensions = {
                row["extname"]: row["extversion"]
                for row in await (
                    await conn.execute("SELECT extname, extversion FROM pg_extension")
                ).fetchall()
            }
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                version = await _schema_version(conn)
                if version > SCHEMA_VERSION:
                    raise SchemaTooNew(
                        f"{shown_url(self.url)} has schema version {version}, but this "
                        f"lorebot knows only up to {SCHEMA_VERSION}: upgrade lorebot (the "
                        "database was not changed)"
                    )
                if version == 0 and not create:
                    raise StoreError(f"there is no lorebot database at {shown_url(self.url)}")
                for number, sql in steps_after(version):
                    try:
                        await conn.execute(sql)
                        await conn.execute(
                            "INSERT INTO lorebot_schema (version) VALUES (%s) ON CONFLICT "
                            "(only_row) DO UPDATE SET version = excluded.version",
                            (number,),
                        )
                    except psycopg.Error as exc:
                        raise StoreError(f"migration {number} failed: {exc}") from exc
                    _log.info("PostgreSQL schema migrated to version %d", number)

    @property
    def dialect(self) -> PostgresDialect:
        return POSTGRESQL

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[PostgresSession]:
        """A session for reads: one pooled connection in autocommit."""
        async with self.connection() as conn:
            yield PostgresSession(conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        """One write transaction for the stores of this database (`memory.stores.database`)."""
        async with self.write() as conn:
            yield PostgresTransaction(conn)

    def session_of(self, tx: object) -> PostgresTransaction:
        return session_of(tx)

    async def transact(self, statements: Sequence[Statement]) -> list[Result]:
        """One transaction, sent at once in pipeline mode: one exchange with the server.
        BEGIN and COMMIT are statements of the pipeline, so a batch cut short on this side
        (a cancelled task) is not committed: the pool rolls the connection back."""
        deferred, self._deferred = self._deferred, []
        async with self.connection() as conn:
            results = await send_together(
                conn, [Statement("BEGIN"), *deferred, *statements, Statement("COMMIT")]
            )
            return results[1 + len(deferred) : -1]

    def defer(self, sql: str, params: Sequence[object]) -> None:
        """Queue a write that may wait (access counts): it rides along with the next
        `transact` instead of paying for a round trip of its own."""
        self._deferred.append(Statement(sql, tuple(params)))

    async def flush(self) -> None:
        """Write what `defer` queued, now."""
        if self._deferred:
            await self.transact([])

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Connection]:
        """A pooled connection inside one transaction, rolled back on any exception."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection in autocommit, for reads; `StoreUnavailable` when none can
        be had (the server is down or every connection is busy past the timeout)."""
        try:
            async with self.pool.connection(timeout=CONNECT_TIMEOUT_S) as conn:
                yield conn
        except (PoolTimeout, psycopg.Error) as exc:
            _stop_if_stopping(exc)
            if (unavailable := _unavailable(exc, self.url)) is None:
                raise  # a statement's own error (a constraint, bad data): the caller's
            raise unavailable from exc

    async def rows(
        self,
        sql: str,
        params: tuple[object, ...] | dict[str, Any] = (),
        *,
        prepare: bool | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of one statement; `prepare` as psycopg's (None: after a few runs)."""
        async with self.connection() as conn:
            return await (await conn.execute(sql, params, prepare=prepare)).fetchall()

    async def scalar(self, sql: str, params: tuple[object, ...] | dict[str, Any] = ()) -> Any:
        async with self.connection() as conn:
            row = await (await conn.execute(sql, params)).fetchone()
        return None if row is None else next(iter(row.values()))

    @property
    def engine(self) -> str:
        server = f"PostgreSQL {self.server_version}".strip()
        return f"{server} (psycopg {psycopg.__version__}, libpq {_libpq()})"

    async def fetch_schema_version(self) -> int:
        async with self.connection() as conn:
            return await _schema_version(conn)

    async def fetch_health(self) -> Health:
        """The schema and the count of notes, with the word index exercised. PostgreSQL
        checks its own pages as it reads them: integrity is "ok" once a query returns."""
        version = await self.fetch_schema_version()
        await self.scalar(
            "SELECT count(*) FROM notes WHERE words @@ plainto_tsquery('lorebot', %s)",
            ("probe",),
        )
        notes = int(await self.scalar("SELECT count(*) FROM notes"))
        return Health("ok", version, notes)

    async def checkpoint(self) -> bool:
        """PostgreSQL's own checkpointer folds its log in; nothing to do."""
        return True

    async def backup_to(self, target: Path) -> None:
        raise StoreError(backup_advice(self.url, target))

    async def close(self) -> None:
        """Write what `defer` queued and close the pool, also when that write fails; safe
        to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.flush()
        finally:
            await self.pool.close()


async def check_if_disturbed(conn: Connection) -> None:
    """The pool's check of a connection it is about to hand out. An idle connection the
    server has nothing to say on is sound, which the socket tells without a round trip;
    one it wrote to (closing it on a restart, or any message) is asked with an empty
    query, and replaced when that fails."""
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        await AsyncConnectionPool.check_connection(conn)


def backup_advice(url: str, target: Path) -> str:
    """What to run instead of `lorebot backup` or `restore` on PostgreSQL: its own tools."""
    conninfo = read_conninfo(url)
    where = conninfo.bare  # the password left out: these tools ask for it
    advice = (
        "lorebot keeps its memory in PostgreSQL here, whose own tools back it up: "
        f"pg_dump --format=custom --file={target} '{where}' (and to restore: "
        f"pg_restore --clean --if-exists --dbname='{where}' {target})"
    )
    if conninfo.secrets:
        advice += "; they read the password from PGPASSWORD or ~/.pgpass"
    return advice


async def _one(conn: Connection, sql: str) -> dict[str, Any]:
    row = await (await conn.execute(sql)).fetchone()
    assert row is not None
    return row


async def _schema_version(conn: Connection) -> int:
    exists = await _one(conn, "SELECT to_regclass('lorebot_schema') IS NOT NULL AS found")
    if not exists["found"]:
        return 0
    row = await (await conn.execute("SELECT version FROM lorebot_schema")).fetchone()
    return 0 if row is None else int(row["version"])


def _libpq() -> str:
    version = psycopg.pq.version()
    return f"{version // 10000}.{version % 10000}"


def _first_line(exc: BaseException) -> str:
    """The first line of libpq's message (which may quote the URL or its password)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _stop_if_stopping(cause: BaseException) -> None:
    """A stop that the driver answered with an error of its own (its connection closed
    while cancelling, a failed rollback) stays a stop: else a loop that lives through store
    errors (a heartbeat) runs on, and `stop()` waits for it forever. (A stop the pool loses
    outright, handing over a connection instead, is caught by the loops themselves:
    `bot.tasks.stop_if_asked`; a check here would also stop the writes a stopping task
    still makes on purpose, such as a replica removing its row.)"""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError from cause


def _unavailable(exc: PoolTimeout | psycopg.Error, url: str) -> StoreUnavailable | None:
    """What a pool or server failure means to lorebot, in words an operator can act on
    (libpq's own scrubbed of the URL's password); None for an error of the statement."""
    if isinstance(exc, PoolTimeout):
        return StoreUnavailable(f"no PostgreSQL connection within {CONNECT_TIMEOUT_S:g} s: {exc}")
    if isinstance(exc, psycopg.errors.QueryCanceled):  # the server is up; the statement was slow
        return StoreUnavailable(
            "a PostgreSQL statement ran past the statement_timeout set for lorebot's role "
            "or database and was cancelled (nothing of it was written): try again, and "
            f"raise that timeout if it keeps happening ({_first_line(exc)})"
        )
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return StoreUnavailable(
            "a PostgreSQL lock was held elsewhere past the lock_timeout set for lorebot's "
            f"role or database (nothing was written): try again ({_first_line(exc)})"
        )
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(f"PostgreSQL is unavailable: {read_conninfo(url).scrub(str(exc))}")
    return None
