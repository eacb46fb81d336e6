"""Filling a PostgreSQL database from another engine's tables (`lorebot db copy`): in one
transaction, so a copy cut short leaves the target as it was and the next one starts
over; rows go in with COPY, ids as they were (the identities then continue after them),
times and flags converted to PostgreSQL's types, and the counts checked on both sides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.clock import from_utc_text
from memory.errors import StoreError
from memory.policy.storable import storable_json_text
from memory.postgres.database import Connection, PostgresDatabase, shown_url
from memory.postgres.message_search import index_messages_from
from memory.transfer.engine_copy import TABLES, TableSource


@dataclass(frozen=True, slots=True)
class Copied:
    """Rows of one table in the source and in the target after the copy."""

    table: str
    source: int
    target: int


class TargetNotEmpty(StoreError):
    """The target holds lorebot data already; nothing was changed."""


async def load_tables(
    db: PostgresDatabase,
    source: TableSource,
    *,
    replace: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> list[Copied]:
    """Copy every table of `source` into `db` (which must hold no lorebot data unless
    `replace`, which empties it first, in the same transaction)."""
    async with db.write() as conn:
        held = await _counts(conn)
        if any(held.values()) and not replace:
            found = ", ".join(f"{n} {table}" for table, n in held.items() if n)
            raise TargetNotEmpty(
                f"{shown_url(db.url)} holds lorebot data already ({found}): copy into an "
                "empty database, or give --force to replace what it holds"
            )
        await conn.execute(f"TRUNCATE {', '.join(TABLES)}, message_words RESTART IDENTITY")
        copied = []
        for table in TABLES:
            count = await _copy_table(conn, source, table, progress)
            copied.append((table, count))
        first = await (await conn.execute("SELECT min(id) AS first FROM messages")).fetchone()
        if first is not None and first["first"] is not None:
            await index_messages_from(conn, int(first["first"]))
        after = await _counts(conn)
    return [Copied(table, count, after[table]) for table, count in copied]


async def _copy_table(
    conn: Connection,
    source: TableSource,
    table: str,
    progress: Callable[[str, int], None] | None,
) -> int:
    kinds = await _column_types(conn, table)
    columns = [c for c in await source.columns(table) if c in kinds]
    convert = [_converter(c, kinds[c]) for c in columns]
    written = 0
    async with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        async for batch in source.batches(table, columns):
            for row in batch:
                try:
                    await copy.write_row([f(v) for f, v in zip(convert, row, strict=True)])
                except ValueError as exc:
                    raise StoreError(f"{table} row {row[0]!r} cannot be copied: {exc}") from None
            written += len(batch)
            if progress is not None:
                progress(table, written)
    if "id" in kinds:
        await conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
            f"coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
        )
    expected = await source.count(table)
    if written != expected:
        raise StoreError(f"{table}: read {written} rows of {expected} from {source.where}")
    return written


def _converter(column: str, kind: str) -> Callable[[object], object]:
    """How a stored value of `column` becomes a PostgreSQL value of `kind`. Text follows
    the rule of every engine (`memory.policy.storable`): the connection's dumpers apply it to
    plain text; JSON written before it may hold the escape of a NUL, which jsonb refuses."""
    if column.endswith("_json"):
        return lambda v: v if not isinstance(v, str) else storable_json_text(v)
    if kind == "timestamp with time zone":
        return lambda v: None if v is None else from_utc_text(str(v))
    if kind == "boolean":
        return lambda v: None if v is None else bool(v)
    return lambda v: v


async def _column_types(conn: Connection, table: str) -> dict[str, str]:
    """The columns of `table` a copy writes (not generated ones), with their types."""
    cursor = await conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = %s AND is_generated = 'NEVER'",
        (table,),
    )
    return {r["column_name"]: r["data_type"] for r in await cursor.fetchall()}


async def _counts(conn: Connection) -> dict[str, int]:
    counts = {}
    for table in TABLES:
        row = await (await conn.execute(f"SELECT count(*) AS n FROM {table}")).fetchone()
        assert row is not None
        counts[table] = int(row["n"])
    return counts
