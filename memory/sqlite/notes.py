"""The note store: saving, forgetting, reading, recall and change sets.

Every write is one transaction that also records a change set, so any change can be
reverted. Every read that serves a conversation takes a `Visibility` and filters in SQL.
The store composes the parts that live in their own modules: validation, scope indexes,
search, bulk import, the change-set log and the write primitives (`memory/note_*.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import aiosqlite

from memory.clock import Clock, utc_now
from memory.database import Transaction
from memory.errors import NotFound
from memory.index import INDEX_MAX_BYTES, INDEX_MAX_LINES, ScopeIndex, fit_turn
from memory.note_validation import validate_draft
from memory.notes import DEFAULT_MAX_NOTE_BYTES, ImportResult
from memory.ranking import Method
from memory.sql import note_changes
from memory.sql.note_engine import Item
from memory.sql.session import Session
from memory.sqlite import note_import, rows
from memory.sqlite.database import SqliteDatabase, connection_of, to_db_time
from memory.sqlite.note_indexes import ScopeIndexes
from memory.sqlite.note_search import NoteSearch
from memory.sqlite.note_sql import INDEX_NOTES, INSERT_ITEM, LIVE, UPSERT_NOTE, visibility_sql
from memory.sqlite.note_writes import fetch_row, state_after
from memory.sqlite.session import SqliteSession
from memory.sqlite.term_stats import TermStats
from memory.sqlite.vectors import SqliteVectorIndex
from memory.types import Change, Note, NoteDraft, SaveResult, Scope, SearchHit
from memory.visibility import Visibility, scope_keys

_log = logging.getLogger(__name__)


class SqliteNoteStore:
    """All note reads and writes of lorebot."""

    def __init__(
        self,
        db: SqliteDatabase,
        *,
        clock: Clock = utc_now,
        max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
        index_max_lines: int = INDEX_MAX_LINES,
        index_max_bytes: int = INDEX_MAX_BYTES,
        vectors: SqliteVectorIndex | None = None,
        fusion: Method = "weighted",
        secrets: Iterable[str] = (),
    ) -> None:
        self.secrets = tuple(secrets)  # configured secret values, never kept in a note
        self.db = db
        self.clock = clock
        self.max_note_bytes = max_note_bytes
        self.term_stats = TermStats(db)
        self.vectors = vectors
        self.fusion: Method = fusion
        self._writes = SqliteNoteWrites()
        self._indexes = ScopeIndexes(
            db, clock, max_lines=index_max_lines, max_bytes=index_max_bytes
        )

    # --- validation -----------------------------------------------------------------

    def validate(self, draft: NoteDraft) -> NoteDraft:
        """Check a draft before anything is stored; raise `InvalidInput` saying why."""
        return validate_draft(draft, self.max_note_bytes, self.secrets)

    # --- reads ----------------------------------------------------------------------

    async def fetch(self, scope: Scope, topic: str) -> Note | None:
        await self.db.flush()  # show the access counts of reads so far
        row = await fetch_row(self.db.conn, scope, topic)
        return None if row is None else rows.note_from_row(row)

    async def state_in(self, tx: Transaction, scope: Scope, topic: str) -> dict[str, object] | None:
        """The stored state of one note as its change sets record it, or None."""
        row = await fetch_row(connection_of(tx), scope, topic)
        return None if row is None else rows.state_of(row)

    async def content_fingerprint(self, scope: Scope, topic: str) -> str | None:
        """A hash of one note's content (None when there is no such note), for a card to
        be checked against when it is decided."""
        row = await fetch_row(self.db.conn, scope, topic)
        return rows.content_fingerprint(None if row is None else rows.state_of(row))

    async def read(self, visibility: Visibility, topic: str) -> list[Note]:
        """The live notes named `topic` that `visibility` may read, bumping their access."""
        where, params = visibility_sql(visibility)
        sql = (
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE topic = ? AND ({where}) "
            "AND (expires_at IS NULL OR expires_at > ?) ORDER BY scope"
        )
        now = to_db_time(self.clock())
        found = await self._select(sql, (topic, *params, now))
        await self._bump(found)
        return found

    async def list_notes(self, scope: Scope | None = None) -> list[Note]:
        """Every live note, or those of one scope, by scope then topic."""
        now = to_db_time(self.clock())
        if scope is None:
            sql = f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE {LIVE} ORDER BY scope, topic"
            return await self._select(sql, (now,))
        sql = f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE scope = ? AND {LIVE} ORDER BY topic"
        return await self._select(sql, (str(scope), now))

    async def list_scopes(self) -> list[Scope]:
        async with self.db.conn.execute("SELECT DISTINCT scope FROM notes ORDER BY scope") as cur:
            return [Scope.parse(row[0]) async for row in cur]

    async def list_visible(self, visibility: Visibility) -> list[Note]:
        """Every live note `visibility` may read, by scope then topic."""
        where, params = visibility_sql(visibility)
        sql = (
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE ({where}) AND {LIVE} "
            "ORDER BY scope, topic"
        )
        return await self._select(sql, (*params, to_db_time(self.clock())))

    async def index(self, scope: Scope, *, public_only: bool = False) -> ScopeIndex:
        """The index of one scope (only its public notes when `public_only`).

        Indexes are cached until the notes change: a write through this store clears them,
        and so does a commit by another process (SQLite's `data_version` moves)."""
        return await self._indexes.get(scope, public_only)

    def _changed(self) -> None:
        """Called by every write: cached indexes may no longer be right."""
        self._indexes.clear()

    async def indexes_for(self, visibility: Visibility) -> list[ScopeIndex]:
        """The indexes a conversation sees, in priority order, within the per-turn cap."""
        found = [await self.index(s) for s in visibility.full]
        found += [await self.index(s, public_only=True) for s in visibility.public_only]
        return fit_turn([i for i in found if i.lines or i.hidden])

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int = 5,
        bump: bool = True,
        snippets: bool = True,
        vector: Sequence[float] | None = None,
    ) -> list[SearchHit]:
        """Top-k notes for `query` among what `visibility` may read, best first.

        With vectors on, the word ranking and the nearest vectors are fused (`vector` is
        the query's, when the caller has it already); otherwise words alone rank. Any text
        is a valid query: every word of it counts, as in a plain bm25 query, weighed by
        how rare it is. Ranking runs on note ids only; notes and snippets are read for the
        top k alone."""
        if k <= 0:
            return []
        search = NoteSearch(self.db, self.clock, self.term_stats, self.vectors, self.fusion)
        found = await search.top(query, visibility, k, snippets, vector)
        if bump:
            await self._bump([hit.note for hit in found])
        return found

    async def fetch_history(
        self, scope: Scope | None = None, topic: str | None = None, *, limit: int = 50
    ) -> list[Change]:
        """Change sets, newest first, optionally of one scope or one note."""
        async with self.db.reading() as sql:
            return await note_changes.history(sql, scope, topic, limit)

    async def fetch_changes_between(
        self, scope: Scope, start: datetime, end: datetime
    ) -> list[Change]:
        """Change sets of one scope in [start, end), oldest first."""
        async with self.db.reading() as sql:
            return await note_changes.changes_between(sql, scope, start, end)

    async def fetch_change(self, change_id: int) -> Change:
        async with self.db.reading() as sql:
            return await note_changes.get_change(sql, change_id)

    # --- writes ---------------------------------------------------------------------

    async def save(
        self,
        draft: NoteDraft,
        *,
        actor: str,
        reason: str = "",
        proposal_id: int | None = None,
    ) -> SaveResult:
        """Create or update the note `draft.scope`/`draft.topic`, recording a change set.

        Saving content identical to the stored note changes nothing."""
        draft = self.validate(draft)
        async with self.db.transaction() as tx:
            return await self.save_in(tx, draft, actor, reason, proposal_id)

    async def save_in(
        self,
        tx: Transaction,
        draft: NoteDraft,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> SaveResult:
        """`save` inside the caller's transaction; `draft` must be validated."""
        conn = connection_of(tx)
        before_index = await self._indexes.build(conn, draft.scope, False)
        change_id, created = await self._upsert(conn, draft, actor, reason, proposal_id)
        row = await fetch_row(conn, draft.scope, draft.topic)
        assert row is not None
        after_index = await self._indexes.build(conn, draft.scope, False)
        note = rows.note_from_row(row)
        shown = {line.split(":", 1)[0][2:] for line in after_index.lines}
        left = sorted({line.split(":", 1)[0][2:] for line in before_index.lines} - shown)
        if left:
            _log.info("save of %s/%s moved %s out of the index", draft.scope, draft.topic, left)
        return SaveResult(note, change_id, created, tuple(left), note.topic in shown)

    async def forget(
        self,
        scope: Scope,
        topic: str,
        *,
        actor: str,
        reason: str = "",
        proposal_id: int | None = None,
    ) -> Change:
        """Delete a note, keeping its last state in the change set so it can be restored."""
        async with self.db.transaction() as tx:
            change_id = await self.forget_in(tx, scope, topic, actor, reason, proposal_id)
        return await self.fetch_change(change_id)

    async def forget_in(
        self,
        tx: Transaction,
        scope: Scope,
        topic: str,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> int:
        """`forget` inside the caller's transaction; returns the change id."""
        conn = connection_of(tx)
        row = await fetch_row(conn, scope, topic)
        if row is None:
            raise NotFound(f"there is no note {topic!r} in {scope}")
        self._changed()
        await conn.execute("DELETE FROM notes WHERE id = ?", (row["id"],))
        return await note_changes.record_change(
            SqliteSession(conn),
            scope,
            topic,
            "forget",
            rows.state_of(row),
            None,
            actor,
            reason,
            proposal_id,
            to_db_time(self.clock()),
        )

    async def revert(self, change_id: int, *, actor: str, reason: str = "") -> Change:
        """Restore the note a change touched to its state before that change; for a change
        of many notes (an import), each of its notes that no later change touched. Refused
        when that would clobber later work (`note_changes.revert`)."""
        async with self.db.transaction() as sql:
            now = to_db_time(self.clock())
            new_id = await note_changes.revert(sql, self._writes, change_id, actor, reason, now)
            self._changed()
        return await self.fetch_change(new_id)

    async def undo(self, actor: str, *, visibility: Visibility | None = None) -> Change:
        """Revert the latest change `actor` made that is not itself a revert or reverted,
        optionally only among the changes `visibility` may see: in its public-only scopes,
        a change that touched a private note is invisible, so undo never reaches it."""
        async with self.db.reading() as sql:
            latest = await note_changes.latest_undoable(sql, actor, visibility)
        if latest is None:
            raise NotFound("there is nothing of yours to undo")
        return await self.revert(latest, actor=actor, reason=f"undo of change {latest}")

    async def import_drafts(
        self,
        drafts: Sequence[NoteDraft],
        *,
        actor: str,
        labels: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Save many notes in one transaction: all of them or, on any error, none. The
        import is one change set of all the notes it created or updated (none when it
        changed nothing).

        Each chunk is written, by a few statements that run without the GIL, while the
        next chunk is validated. `labels` name where each draft came from (e.g. a file and
        line) for error messages; `progress(written, total)` is called as chunks are
        written."""
        now = to_db_time(self.clock())
        self._changed()
        return await note_import.import_drafts(
            self.db, drafts, self.validate, actor=actor, now=now, labels=labels, progress=progress
        )

    async def purge_expired(self) -> int:
        """Delete notes past their expiry; their last state stays in the change sets."""
        now = to_db_time(self.clock())
        async with self.db.write() as conn:
            async with conn.execute(
                "SELECT * FROM notes WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            ) as cursor:
                expired = list(await cursor.fetchall())
            self._changed()
            for row in expired:
                await conn.execute("DELETE FROM notes WHERE id = ?", (row["id"],))
                await note_changes.record_change(
                    SqliteSession(conn),
                    Scope.parse(row["scope"]),
                    row["topic"],
                    "forget",
                    rows.state_of(row),
                    None,
                    "lorebot",
                    "expired",
                    None,
                    now,
                )
        return len(expired)

    # --- internals ------------------------------------------------------------------

    async def _upsert(
        self,
        conn: aiosqlite.Connection,
        draft: NoteDraft,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> tuple[int | None, bool]:
        row = await fetch_row(conn, draft.scope, draft.topic)
        before = None if row is None else rows.state_of(row)
        after = state_after(draft, before, actor, to_db_time(self.clock()))
        if before is not None and rows.same_content(before, after):
            return None, False
        await self._write_state(conn, draft.scope, draft.topic, after, new=before is None)
        action = "create" if before is None else "update"
        change_id = await note_changes.record_change(
            SqliteSession(conn),
            draft.scope,
            draft.topic,
            action,
            before,
            after,
            actor,
            reason,
            proposal_id,
            to_db_time(self.clock()),
        )
        return change_id, before is None

    async def _write_state(
        self,
        conn: aiosqlite.Connection,
        scope: Scope,
        topic: str,
        state: dict[str, Any],
        *,
        new: bool,
    ) -> None:
        """Insert or update one note, forgetting cached indexes."""
        self._changed()
        await self._writes.write_state(SqliteSession(conn), scope, topic, state, new=new)

    async def _select(self, sql: str, params: tuple[object, ...]) -> list[Note]:
        await self.db.flush()
        async with self.db.conn.execute(sql, params) as cursor:
            return [rows.note_from_row(r) for r in await cursor.fetchall()]

    async def _bump(self, notes: Iterable[Note]) -> None:
        """Count a read; written with the next transaction (a turn's history write)."""
        now = to_db_time(self.clock())
        self.db.defer(
            "UPDATE notes SET access_count = access_count + 1, last_access = ? WHERE id = ?",
            [(now, n.id) for n in notes],
        )


class SqliteNoteWrites:
    """The writes of notes SQLite does its own way (`memory.sql.note_engine.NoteWrites`): a
    new note gets its FTS5 row here, and items are inserted row by row."""

    async def write_state(
        self, sql: Session, scope: Scope, topic: str, state: dict[str, object], *, new: bool
    ) -> None:
        keys = scope_keys(scope, bool(state["private"]))
        await sql.run(
            UPSERT_NOTE, (str(scope), topic, keys, *(state[c] for c in rows.STATE_COLUMNS))
        )
        if new:  # triggers index the updates and deletes
            await sql.run(f"{INDEX_NOTES} WHERE scope = ? AND topic = ?", (str(scope), topic))

    async def insert_items(self, sql: Session, change_id: int, items: Sequence[Item]) -> None:
        await sql.run_many(INSERT_ITEM, [(change_id, *item) for item in items])
