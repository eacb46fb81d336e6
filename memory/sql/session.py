"""The stores' logic is written once, in this package, for every engine: SQL in lorebot's
neutral form over a `Session`, and the domain rules as plain code above it. An engine
package supplies the session, its dialect and what truly differs (full-text ranking,
vectors, the leader lock, migrations).

What the engine-neutral stores ask of an engine: sessions that run lorebot's neutral SQL,
and a dialect for the few things each engine writes its own way.

Neutral SQL uses `?` placeholders, names every column it reads (rows are read by name
only), and keeps to what SQLite and PostgreSQL both take: `ON CONFLICT … DO UPDATE`,
`ON CONFLICT DO NOTHING`, `IN (?, ?)` (`marks`), `count(*) AS n`. What differs goes
through the `Dialect`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

Params = Sequence[object]


class Row(Protocol):
    """One row, read by column name (a `sqlite3.Row` or a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Iterable[str]: ...


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a batch."""

    sql: str
    params: Params = ()


@dataclass(frozen=True, slots=True)
class Result:
    """What one statement of a batch gave: its rows (none for a write without RETURNING)
    and how many rows it changed."""

    rows: list[Row] = field(default_factory=list)
    changed: int = -1


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Query(Generic[T]):
    """A read as statements and how their results make its value, so that reads of several
    stores (what a turn needs) go to the database in one batch."""

    statements: Sequence[Statement]
    read: Callable[[Sequence[Result]], T]

    def split(self, results: Sequence[Result]) -> tuple[T, Sequence[Result]]:
        """This query's value from the first of `results`, and the results after them."""
        count = len(self.statements)
        return self.read(results[:count]), results[count:]


async def fetch_one(db: SqlDatabase, query: Query[T]) -> T:
    """The value of one query, read in one round trip."""
    async with db.reading() as sql:
        return query.read(await sql.batch(query.statements))


class Dialect(Protocol):
    """How an engine writes what the two engines do not share."""

    name: str  # "sqlite" or "postgresql"

    def time(self, moment: datetime) -> object:
        """A time as this engine keeps it (SQLite: fixed-width UTC text)."""
        ...

    def read_time(self, value: Any) -> datetime | None:
        """A time column as an aware UTC datetime."""
        ...

    def json_text(self, column: str, key: str) -> str:
        """SQL reading the text at top-level `key` of a JSON text column."""
        ...

    def lock_rows(self, alias: str) -> str:
        """A clause locking the selected rows of `alias` until the transaction ends ("" on
        SQLite, whose write transaction holds the whole database)."""
        ...

    def share_rows(self, alias: str) -> str:
        """A clause keeping the selected rows of `alias` from being changed until the
        transaction ends, while others may read and share them ("" on SQLite)."""
        ...

    def time_text(self, value: Any) -> str:
        """A time column as lorebot shows it: fixed-width UTC text (`memory.clock`), which
        SQLite keeps and gives back as it was stored."""
        ...

    def written_here(self, alias: str) -> str:
        """A condition true of a row of `alias` this transaction wrote; on SQLite, whose
        write transaction has the database to itself, true of every row (use it where a row
        written before cannot change the outcome)."""
        ...


class Session(Protocol):
    """One connection of an engine running neutral SQL, in a transaction or not."""

    @property
    def dialect(self) -> Dialect: ...

    async def rows(self, sql: str, params: Params = ()) -> list[Row]:
        """Every row of one statement."""
        ...

    async def row(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of one statement, or None."""
        ...

    async def run(self, sql: str, params: Params = ()) -> int:
        """Run one statement; the number of rows it changed."""
        ...

    async def run_many(self, sql: str, params: Iterable[Params]) -> None:
        """Run one statement once for each set of parameters."""
        ...

    async def insert(self, sql: str, params: Params) -> int:
        """Run one INSERT of one row into a table with an `id` key; the new row's id."""
        ...

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        """Run statements in order, sent together: one round trip to the engine (SQLite's
        thread, PostgreSQL's server) for all of them. A failure stops the batch there."""
        ...


class SqlDatabase(Protocol):
    """An engine's database as the neutral stores use it."""

    @property
    def dialect(self) -> Dialect: ...

    def reading(self) -> AbstractAsyncContextManager[Session]:
        """A session for reads (several statements may share its connection)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Session]:
        """A session inside one write transaction, rolled back on any exception; it is the
        `memory.stores.database.Transaction` that other stores' `*_in` methods take."""
        ...

    async def transact(self, statements: Sequence[Statement]) -> list[Result]:
        """Run statements as one write transaction, in one round trip (BEGIN and COMMIT
        included); rolled back, and the error raised, when one fails."""
        ...

    async def close(self) -> None:
        """Write what is pending and close; safe to call twice."""
        ...

    def session_of(self, tx: object) -> Session:
        """The session of a transaction of this database; `TypeError` for another's."""
        ...


def marks(count: int) -> str:
    """`?, ?, ?`: the placeholders of an `IN (…)` list of `count` values (not 0)."""
    if count < 1:
        raise ValueError("an IN list needs one value at least")
    return ", ".join("?" * count)
