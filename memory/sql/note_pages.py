"""Notes a page at a time (`memory.stores.note_pages`), on every engine: the visibility is
part of each statement's WHERE, as in chat's reads."""

from __future__ import annotations

from memory.clock import Clock, utc_now
from memory.policy.visibility import Visibility
from memory.sql import note_changes
from memory.sql.note_rows import LIVE, NOTE_COLUMNS, note_from_row, visibility_sql
from memory.sql.session import SqlDatabase, Statement
from memory.stores.note_pages import NotePage
from memory.types import Change, Note, Scope


class SqlNotePages:
    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def scope_counts(self, visibility: Visibility | None) -> list[tuple[Scope, int]]:
        # Every note by scope (an index-only count), less those expired and not yet purged
        # (a few, by the index of expiry times): a count of the live rows would read them all.
        where, params = ("1 = 1", ()) if visibility is None else visibility_sql(visibility)
        async with self.db.reading() as sql:
            every, expired = await sql.batch(
                [
                    Statement(
                        f"SELECT scope, count(*) AS n FROM notes WHERE {where} GROUP BY scope",
                        params,
                    ),
                    Statement(  # of every scope: by the expiry index alone, few rows
                        "SELECT scope, count(*) AS n FROM notes "
                        "WHERE expires_at IS NOT NULL AND expires_at <= ? GROUP BY scope",
                        (self._now(),),
                    ),
                ]
            )
        gone = {row["scope"]: row["n"] for row in expired.rows}
        counts = ((row["scope"], row["n"] - gone.get(row["scope"], 0)) for row in every.rows)
        return sorted((Scope.parse(scope), n) for scope, n in counts if n > 0)

    async def page(
        self, visibility: Visibility, scope: Scope, *, offset: int, limit: int
    ) -> NotePage:
        where, scopes = visibility_sql(visibility)
        admitted = f"scope = ? AND ({where}) AND {LIVE}"
        params = (str(scope), *scopes, self._now())
        async with self.db.reading() as sql:
            notes, count = await sql.batch(
                [
                    Statement(
                        f"SELECT {NOTE_COLUMNS} FROM notes WHERE {admitted} "
                        "ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ? OFFSET ?",
                        (*params, limit, offset),
                    ),
                    Statement(f"SELECT count(*) AS n FROM notes WHERE {admitted}", params),
                ]
            )
        read_time = self.db.dialect.read_time
        return NotePage([note_from_row(r, read_time) for r in notes.rows], count.rows[0]["n"])

    async def note(self, visibility: Visibility | None, note_id: int) -> Note | None:
        where, params = ("1 = 1", ()) if visibility is None else visibility_sql(visibility)
        async with self.db.reading() as sql:
            found = await sql.row(
                f"SELECT {NOTE_COLUMNS} FROM notes WHERE id = ? AND ({where}) AND {LIVE}",
                (note_id, *params, self._now()),
            )
        return None if found is None else note_from_row(found, self.db.dialect.read_time)

    def _now(self) -> object:
        return self.db.dialect.time(self.clock())

    async def change(self, visibility: Visibility | None, change_id: int) -> Change | None:
        async with self.db.reading() as sql:
            return await note_changes.visible_change(sql, change_id, visibility)
