"""The SQLite database: pragmas, migrations, one writer, transactions, and time columns."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, closing, suppress
from pathlib import Path
from typing import Any

import aiosqlite

from memory.clock import to_utc_text
from memory.errors import SchemaTooNew, StoreError, StoreUnavailable
from memory.sql.session import Result, Statement
from memory.sqlite import driver
from memory.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from memory.sqlite.session import (
    SQLITE,
    SqliteDialect,
    SqliteSession,
    SqliteTransaction,
    run_all,
    session_of,
)
from memory.stores.database import Health

_log = logging.getLogger(__name__)


# SQLite keeps times as this fixed-width text, so SQL compares them as strings.
to_db_time = to_utc_text


class _Refused(Exception):
    """BEGIN IMMEDIATE failed: the database stayed locked past the busy timeout, or worse."""


def _in_transaction(
    deferred: list[tuple[str, list[tuple[object, ...]]]], statements: Sequence[Statement], raw: Any
) -> list[Result]:
    """A whole write transaction on a raw connection, on its thread."""
    try:
        raw.execute("BEGIN IMMEDIATE")
    except driver.DatabaseError as exc:
        raise _Refused(str(exc)) from exc
    try:
        for sql, params in deferred:
            raw.executemany(sql, params)
        results = run_all(statements, raw)
        raw.execute("COMMIT")
    except BaseException:
        if raw.in_transaction:  # else SQLite rolled it back itself (a full disk)
            raw.execute("ROLLBACK")
        raise
    return results


def _create_private(path: Path) -> None:
    """Create `path` empty and readable only by its owner unless it exists; SQLite gives
    the WAL and shared-memory files the permissions of their database file."""
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def inspect_file(path: Path) -> Health:
    """Health of the database file at `path`, read only and without migrating it (a backup
    before it is restored); `StoreError` when it is no lorebot database."""
    try:
        # `closing`: a sqlite3 connection's own `with` ends a transaction, not the connection.
        with closing(driver.sqlite_module().connect(f"file:{path}?mode=ro", uri=True)) as conn:
            driver.load_vec(conn)  # vector tables are checked too when present
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
            notes = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
    except driver.DatabaseError as exc:
        raise StoreError(f"{path} is not a lorebot database: {exc}") from None
    return Health(str(integrity), int(version), int(notes))


class SqliteDatabase:
    """One aiosqlite connection shared by readers and the single writer.

    Writes go through `write()`, which holds an asyncio lock so that two
    coroutines never interleave statements inside one transaction.
    """

    def __init__(self, conn: driver.Connection, path: Path) -> None:
        self.conn = conn
        self.capabilities = driver.Capabilities(fts5=None, vectors=conn.vec_problem)
        self.path = path
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._deferred: list[tuple[str, list[tuple[object, ...]]]] = []
        self._committed = asyncio.Event()
        # A second, read-only connection so a search can run two queries at once on two
        # cores (SQLite releases the GIL while it works); the writer itself when in memory.
        self.reader: aiosqlite.Connection = conn

    @classmethod
    async def open(
        cls,
        path: Path | str,
        *,
        busy_timeout_ms: int = 5000,
        want_vectors: bool = False,
        create: bool = True,
    ) -> SqliteDatabase:
        """Open (creating if needed, unless not `create`) and migrate the database at `path`.
        The driver's self-test runs first: FTS5 must work, and sqlite-vec too when
        `want_vectors`."""
        path = Path(path)
        if str(path) != ":memory:":
            if not create and not path.exists():
                raise StoreError(f"there is no database at {path}")
            path.parent.mkdir(parents=True, exist_ok=True)
            _create_private(path)
        try:
            conn = driver.connect(path)
            await conn
        except driver.Error as exc:
            raise StoreError(f"cannot open database {path}: {exc}") from exc
        db = cls(conn, path)
        try:
            await db._prepare(busy_timeout_ms, want_vectors)
            if str(path) != ":memory:":
                await db._open_reader(busy_timeout_ms)
        except BaseException:
            await db._close_connections()
            raise
        return db

    async def _open_reader(self, busy_timeout_ms: int) -> None:
        reader = driver.connect(self.path)
        await reader
        self.reader = reader  # from here on closed with the writer, also if this fails
        await reader.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await reader.execute("PRAGMA query_only = 1")

    async def _prepare(self, busy_timeout_ms: int, want_vectors: bool) -> None:
        try:
            version = await self.scalar("PRAGMA user_version")
        except driver.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a lorebot database: {exc}") from exc
        self.capabilities = await driver.self_test(self.conn)
        problem = self.capabilities.explain(want_vectors=want_vectors)
        if problem is not None:
            raise StoreError(problem)
        # Checked before any pragma writes, so a newer database is left untouched.
        if int(version) > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.path} has schema version {version}, but this lorebot knows only "
                f"up to {SCHEMA_VERSION}: upgrade lorebot (the database was not changed)"
            )
        await self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await self.conn.execute("PRAGMA journal_mode = WAL")
        await self.conn.execute("PRAGMA synchronous = NORMAL")
        await self.conn.execute("PRAGMA foreign_keys = ON")
        # What is deleted is overwritten, so a removed row (a handled event, a forgotten
        # note) does not stay readable in the file's free space.
        await self.conn.execute("PRAGMA secure_delete = ON")
        for number in range(int(version), SCHEMA_VERSION):
            try:
                await self._migrate(number)
            except driver.Error as exc:
                raise StoreError(f"migration {number + 1} of {self.path} failed: {exc}") from exc
            _log.info("database %s migrated to schema version %d", self.path, number + 1)

    async def _migrate(self, number: int) -> None:
        """Apply migration `number` (from 0) and count it, in one transaction; a failure
        leaves the database as it was."""
        step = MIGRATIONS[number]
        version = f"PRAGMA user_version = {number + 1};"
        try:
            if isinstance(step, str):
                # executescript commits any open transaction first, so the script has its own.
                await self.conn.executescript(f"BEGIN IMMEDIATE;\n{step}\n{version}\nCOMMIT;")
            else:
                await self.conn.execute("BEGIN IMMEDIATE")
                await step(self.conn)
                await self.conn.execute(version)
                await self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                await self.conn.execute("ROLLBACK")
            raise

    async def scalar(self, sql: str, params: tuple[object, ...] = ()) -> Any:
        row: Any = await SqliteSession(self.conn).row(sql, params)  # one hop
        return None if row is None else row[0]

    def defer(self, sql: str, params: list[tuple[object, ...]]) -> None:
        """Queue a write that may wait (e.g. access counts): it rides along with the next
        transaction instead of paying for one of its own."""
        if params:
            self._deferred.append((sql, params))

    async def flush(self) -> None:
        """Write what `defer` queued, now (unless a transaction is open: it waits for the
        next one rather than wait for the lock its own caller may hold)."""
        if self._deferred and not self.conn.in_transaction:
            async with self.write():
                pass

    @property
    def dialect(self) -> SqliteDialect:
        return SQLITE

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[SqliteSession]:
        """A session for reads, on the shared connection."""
        yield SqliteSession(self.conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTransaction]:
        """One write transaction for the stores of this database (`memory.stores.database`)."""
        async with self.write() as conn:
            yield SqliteTransaction(conn)

    def session_of(self, tx: object) -> SqliteTransaction:
        return session_of(tx)

    async def transact(self, statements: Sequence[Statement]) -> list[Result]:
        """`write()` in one hop to the connection's thread: BEGIN IMMEDIATE, what `defer`
        queued, the statements and COMMIT (ROLLBACK on any error)."""
        async with self._write_lock:
            deferred, self._deferred = self._deferred, []
            work = functools.partial(_in_transaction, deferred, statements)
            try:
                results = await driver.in_thread(self.conn, work)
            except _Refused as exc:
                self._deferred[:0] = deferred  # kept for the next transaction
                raise StoreUnavailable(f"the database takes no writes now: {exc}") from None
            self._committed.set()
            return results

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction (BEGIN IMMEDIATE) on the connection itself, for the SQL of
        this package; rolled back on any exception."""
        async with self._write_lock:
            try:
                await self.conn.execute("BEGIN IMMEDIATE")
            except driver.DatabaseError as exc:  # locked past the busy timeout, or worse
                raise StoreUnavailable(f"the database takes no writes now: {exc}") from exc
            try:
                deferred, self._deferred = self._deferred, []
                for sql, params in deferred:
                    await self.conn.executemany(sql, params)
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:  # else SQLite rolled it back itself
                    await self.conn.execute("ROLLBACK")
                raise
            # Only a COMMIT the database refused (a statement left open) is rolled back: a
            # cancel while it is on its way to the thread lets it run, and passes.
            try:
                await self.conn.execute("COMMIT")
            except driver.Error:
                if self.conn.in_transaction:
                    await self.conn.execute("ROLLBACK")
                raise
            self._committed.set()

    async def wait_for_commit(self, timeout_s: float) -> None:
        """Return once a commit happened since the last call, or after `timeout_s`."""
        # Not `wait_for`: on Python 3.11 it can swallow a cancel that lands just as the
        # event is set, and the embedding task would then never stop.
        with suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._committed.wait()
        self._committed.clear()

    async def checkpoint(self, *, attempts: int = 5, pause_s: float = 0.05) -> bool:
        """Fold the WAL back into the database file; False when the connection stayed busy,
        which leaves it for the next time."""
        # SQLite refuses a checkpoint as "locked" while another task has a statement or a
        # transaction open on the shared connection; those end within moments. (On a
        # connection of its own, the checkpoint would make the bot's writes fail instead.)
        for _ in range(attempts):
            try:
                # Its row read and its statement closed in the same hop: a statement left
                # open on the shared connection makes the next COMMIT fail.
                await SqliteSession(self.conn).row("PRAGMA wal_checkpoint(TRUNCATE)")
                return True
            except driver.Error as exc:
                if "locked" not in str(exc):
                    raise
            await asyncio.sleep(pause_s)
        return False

    async def backup_to(self, target: Path) -> None:
        """An online copy of the database at `target`, written atomically. It holds the
        rows alone: not the free space where deleted ones were (`VACUUM INTO`), which a
        database written before `secure_delete` was set may still have."""
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        partial.unlink(missing_ok=True)
        _create_private(partial)
        # A connection of its own: VACUUM refuses to run beside a transaction or another
        # statement of its connection, and the shared one may have either at any time.
        async with driver.connect(self.path) as source:
            async with source.execute("PRAGMA busy_timeout = 5000"):
                pass
            await source.execute("VACUUM INTO ?", (str(partial),))
        partial.replace(target)

    @property
    def engine(self) -> str:
        return driver.driver_name()

    async def fetch_integrity(self) -> str:
        return str(await self.scalar("PRAGMA integrity_check"))

    async def fetch_schema_version(self) -> int:
        """The number of migrations this database has."""
        return int(await self.scalar("PRAGMA user_version"))

    async def fetch_health(self) -> Health:
        """Integrity, schema and the count of notes, with the full-text index exercised
        (a broken FTS5 build raises here, not in a person's search)."""
        integrity = await self.fetch_integrity()
        version = await self.fetch_schema_version()
        await self.scalar("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", ('"probe"',))
        notes = int(await self.scalar("SELECT count(*) FROM notes"))
        return Health(integrity, version, notes)

    async def close(self) -> None:
        """Write what was deferred and close both connections, also when that write fails
        (an open connection's thread would keep the process from exiting); safe to call
        twice."""
        if self._closed:
            return
        try:
            await self.flush()
        finally:
            self._closed = True
            await self._close_connections()

    async def _close_connections(self) -> None:
        try:
            if self.reader is not self.conn:
                await self.reader.close()
        finally:
            await self.conn.close()
