"""The note store on PostgreSQL: saving, forgetting, reading, recall and change sets.

As on SQLite, every write is one transaction that records a change set (the same JSON
states, `memory.note_states`), and every read that serves a conversation filters by its
`Visibility` in SQL. Two replicas saving the same note take its row lock in turn; a save
reads the note `FOR UPDATE`, so the change set it records is the change it made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from memory.clock import Clock, to_utc_text, utc_now
from memory.database import Transaction
from memory.errors import NotFound
from memory.index import (
    INDEX_MAX_BYTES,
    INDEX_MAX_LINES,
    ScopeIndex,
    build_index,
    fit_turn,
)
from memory.note_states import content_fingerprint, same_content, state_after
from memory.note_validation import validate_draft
from memory.notes import DEFAULT_MAX_NOTE_BYTES, ImportResult
from memory.postgres import note_import
from memory.postgres.database import Connection, PostgresDatabase, connection_of
from memory.postgres.note_rows import (
    NOTE_COLUMNS,
    UPSERT_NOTE,
    note_from_row,
    state_of,
    state_values,
)
from memory.postgres.note_search import (
    LENGTH,
    LIVE,
    VISIBLE,
    NoteSearch,
    note_fields,
    visibility_params,
)
from memory.postgres.session import PostgresSession, session_of
from memory.postgres.words import TableStats
from memory.ranking import Method
from memory.sql import note_changes
from memory.sql.note_engine import Item
from memory.sql.session import Session
from memory.types import (
    Change,
    Note,
    NoteDraft,
    SaveResult,
    Scope,
    SearchHit,
    index_line,
)
from memory.vectors import VectorIndex
from memory.visibility import Visibility

_log = logging.getLogger(__name__)

# How many ranked notes of a scope are considered for its index; more never fit 40 lines.
_INDEX_CANDIDATES = 400


class PostgresNoteStore:
    """All note reads and writes of lorebot, on PostgreSQL."""

    def __init__(
        self,
        db: PostgresDatabase,
        *,
        clock: Clock = utc_now,
        max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
        index_max_lines: int = INDEX_MAX_LINES,
        index_max_bytes: int = INDEX_MAX_BYTES,
        vectors: VectorIndex | None = None,
        fusion: Method = "weighted",
        secrets: Iterable[str] = (),
    ) -> None:
        self.secrets = tuple(secrets)  # configured secret values, never kept in a note
        self.db = db
        self.clock = clock
        self.max_note_bytes = max_note_bytes
        self.vectors = vectors
        self.fusion: Method = fusion
        self._writes = PostgresNoteWrites()
        self._caps = {"max_lines": index_max_lines, "max_bytes": index_max_bytes}
        # Cleared by every write here, so this process ranks by what it just wrote.
        self.word_stats = TableStats(db, "notes", LENGTH, note_fields)

    def validate(self, draft: NoteDraft) -> NoteDraft:
        """Check a draft before anything is stored; raise `InvalidInput` saying why."""
        return validate_draft(draft, self.max_note_bytes, self.secrets)

    # --- reads ----------------------------------------------------------------------

    async def fetch(self, scope: Scope, topic: str) -> Note | None:
        found = await self._select(
            "WHERE scope = %(scope)s AND topic = %(topic)s", {"scope": str(scope), "topic": topic}
        )
        return found[0] if found else None

    async def state_in(self, tx: Transaction, scope: Scope, topic: str) -> dict[str, object] | None:
        """The stored state of one note as its change sets record it, or None."""
        return await _state(connection_of(tx), scope, topic)

    async def content_fingerprint(self, scope: Scope, topic: str) -> str | None:
        """A hash of one note's content (None when there is no such note)."""
        async with self.db.connection() as conn:
            return content_fingerprint(await _state(conn, scope, topic))

    async def read(self, visibility: Visibility, topic: str) -> list[Note]:
        """The live notes named `topic` that `visibility` may read, bumping their access."""
        found = await self._select(
            f"WHERE topic = %(topic)s AND {VISIBLE} AND {LIVE} ORDER BY scope",
            {"topic": topic, **visibility_params(visibility)},
        )
        await self._bump(found)
        return found

    async def list_notes(self, scope: Scope | None = None) -> list[Note]:
        """Every live note, or those of one scope, by scope then topic."""
        if scope is None:
            return await self._select(f"WHERE {LIVE} ORDER BY scope, topic")
        return await self._select(
            f"WHERE scope = %(scope)s AND {LIVE} ORDER BY topic", {"scope": str(scope)}
        )

    async def list_scopes(self) -> list[Scope]:
        found = await self.db.rows("SELECT DISTINCT scope FROM notes ORDER BY scope")
        return [Scope.parse(r["scope"]) for r in found]

    async def list_visible(self, visibility: Visibility) -> list[Note]:
        """Every live note `visibility` may read, by scope then topic."""
        return await self._select(
            f"WHERE {VISIBLE} AND {LIVE} ORDER BY scope, topic", {**visibility_params(visibility)}
        )

    async def index(self, scope: Scope, *, public_only: bool = False) -> ScopeIndex:
        """The index of one scope (only its public notes when `public_only`), read fresh:
        another replica may have written since."""
        async with self.db.connection() as conn:
            return await self._build_index(conn, scope, public_only)

    async def _build_index(self, conn: Connection, scope: Scope, public_only: bool) -> ScopeIndex:
        private = "AND NOT private" if public_only else ""
        params = {"scope": str(scope), "now": self.clock(), "limit": _INDEX_CANDIDATES}
        cursor = await conn.execute(
            f"SELECT topic, summary FROM notes WHERE scope = %(scope)s {private} AND {LIVE} "
            "ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT %(limit)s",
            params,
        )
        ranked = [index_line(r["topic"], r["summary"]) for r in await cursor.fetchall()]
        index = build_index(scope, ranked, **self._caps)
        if len(ranked) == _INDEX_CANDIDATES:
            cursor = await conn.execute(
                f"SELECT count(*) AS n FROM notes WHERE scope = %(scope)s {private} AND {LIVE}",
                params,
            )
            row = await cursor.fetchone()
            assert row is not None
            index = ScopeIndex(scope, index.lines, int(row["n"]) - len(index.lines))
        return index

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
        """Top-k notes for `query` among what `visibility` may read, best first (as on
        SQLite: bm25 by words, fused with the nearest vectors when they are on)."""
        if k <= 0:
            return []
        search = NoteSearch(self.db, self.clock, self.vectors, self.fusion, self.word_stats)
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
        """Create or update the note `draft.scope`/`draft.topic`, recording a change set;
        content identical to the stored note changes nothing."""
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
        sql = session_of(tx)
        conn = sql.conn
        self.word_stats.clear()
        before_index = await self._build_index(conn, draft.scope, False)
        before = await _state(conn, draft.scope, draft.topic, lock=True)
        after = state_after(draft, before, actor, to_utc_text(self.clock()))
        change_id: int | None = None
        if before is None or not same_content(before, after):
            await self._writes.write_state(sql, draft.scope, draft.topic, after, new=False)
            change_id = await note_changes.record_change(
                sql,
                draft.scope,
                draft.topic,
                "create" if before is None else "update",
                before,
                after,
                actor,
                reason,
                proposal_id,
                self.clock(),
            )
        [note] = await _notes(
            conn, "WHERE scope = %s AND topic = %s", (str(draft.scope), draft.topic)
        )
        after_index = await self._build_index(conn, draft.scope, False)
        shown = {line.split(":", 1)[0][2:] for line in after_index.lines}
        left = sorted({line.split(":", 1)[0][2:] for line in before_index.lines} - shown)
        if left:
            _log.info(
                "save of %s/%s moved %s out of the index",
                draft.scope,
                draft.topic,
                left,
            )
        return SaveResult(note, change_id, before is None, tuple(left), note.topic in shown)

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
        self.word_stats.clear()
        cursor = await conn.execute(
            "DELETE FROM notes WHERE scope = %s AND topic = %s RETURNING *",
            (str(scope), topic),
        )
        row = await cursor.fetchone()
        if row is None:
            raise NotFound(f"there is no note {topic!r} in {scope}")
        return await note_changes.record_change(
            PostgresSession(conn),
            scope,
            topic,
            "forget",
            state_of(row),
            None,
            actor,
            reason,
            proposal_id,
            self.clock(),
        )

    async def revert(self, change_id: int, *, actor: str, reason: str = "") -> Change:
        """Restore what a change touched to its state before it; refused when it changed
        again since, so a revert never clobbers later work."""
        self.word_stats.clear()
        async with self.db.transaction() as sql:
            new_id = await note_changes.revert(
                sql, self._writes, change_id, actor, reason, self.clock()
            )
        return await self.fetch_change(new_id)

    async def undo(self, actor: str, *, visibility: Visibility | None = None) -> Change:
        """Revert the latest change `actor` made that is not itself a revert or reverted,
        optionally only among the changes `visibility` may see."""
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
        """Save many notes in one transaction, all or none, as one change of many notes
        (`note_changes.import_drafts`: COPY, then one statement per table)."""
        self.word_stats.clear()
        return await note_import.import_drafts(
            self.db, drafts, self.validate, actor=actor, now=self.clock(), labels=labels,
            progress=progress,
        )  # fmt: skip

    async def purge_expired(self) -> int:
        """Delete notes past their expiry; their last state stays in the change sets."""
        self.word_stats.clear()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "DELETE FROM notes WHERE expires_at IS NOT NULL AND expires_at <= %s RETURNING *",
                (self.clock(),),
            )
            expired = await cursor.fetchall()
            for row in expired:
                await note_changes.record_change(
                    PostgresSession(conn),
                    Scope.parse(row["scope"]),
                    row["topic"],
                    "forget",
                    state_of(row),
                    None,
                    "lorebot",
                    "expired",
                    None,
                    self.clock(),
                )
        return len(expired)

    # --- internals ------------------------------------------------------------------

    async def _select(self, where: str, params: dict[str, object] | None = None) -> list[Note]:
        found = await self.db.rows(
            f"SELECT {NOTE_COLUMNS} FROM notes {where}", {"now": self.clock(), **(params or {})}
        )
        return [note_from_row(r) for r in found]

    async def _bump(self, notes: Iterable[Note]) -> None:
        """Count a read of each note."""
        ids = [n.id for n in notes]
        if ids:
            async with self.db.connection() as conn:
                await conn.execute(
                    "UPDATE notes SET access_count = access_count + 1, last_access = %s "
                    "WHERE id = ANY(%s)",
                    (self.clock(), ids),
                )


async def _state(
    conn: Connection, scope: Scope, topic: str, *, lock: bool = False
) -> dict[str, object] | None:
    """The kept state of one note (locked until the transaction ends when `lock`)."""
    cursor = await conn.execute(
        "SELECT * FROM notes WHERE scope = %s AND topic = %s" + (" FOR UPDATE" if lock else ""),
        (str(scope), topic),
    )
    row = await cursor.fetchone()
    return None if row is None else state_of(row)


async def _notes(conn: Connection, where: str, params: tuple[object, ...]) -> list[Note]:
    cursor = await conn.execute(f"SELECT {NOTE_COLUMNS} FROM notes {where}", params)
    return [note_from_row(r) for r in await cursor.fetchall()]


class PostgresNoteWrites:
    """The writes of notes PostgreSQL does its own way (`memory.sql.note_engine.NoteWrites`):
    a note's word index follows its row by itself, and items are written by COPY."""

    async def write_state(
        self, sql: Session, scope: Scope, topic: str, state: dict[str, object], *, new: bool
    ) -> None:
        await sql.run(UPSERT_NOTE, (str(scope), topic, *state_values(state)))

    async def insert_items(self, sql: Session, change_id: int, items: Sequence[Item]) -> None:
        await note_import.copy_items(session_of(sql).conn, change_id, items)
