"""The note store, written once for every engine: saving, forgetting, reading, recall and
change sets, over an engine's `Session`, with what only the engine does (ranking by words,
its word index, bulk writes) passed in as a `NoteEngine`.

Every write is one transaction that also records a change set (`note_changes`), so any
change can be reverted. Every read that serves a conversation takes a `Visibility` and
filters by it in SQL. Two replicas saving the same note take its row in turn: a save reads
the note locked (`Dialect.lock_rows`), so the change set it records is the change it made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from memory.clock import Clock, to_utc_text, utc_now
from memory.errors import NotFound
from memory.policy.note_states import content_fingerprint, same_content, state_after
from memory.policy.note_validation import validate_draft
from memory.policy.visibility import Visibility
from memory.ranking import Method
from memory.sql import note_changes
from memory.sql.note_engine import NoteEngine
from memory.sql.note_indexes import ScopeIndexes, wanted_by
from memory.sql.note_rows import LIVE, NOTE_COLUMNS, note_from_row, state_of, visibility_sql
from memory.sql.session import Params, Result, Session, SqlDatabase, Statement, marks
from memory.stores.database import Database, Transaction
from memory.stores.index import INDEX_MAX_BYTES, INDEX_MAX_LINES, ScopeIndex, fit_turn
from memory.stores.notes import DEFAULT_MAX_NOTE_BYTES, ImportResult
from memory.stores.vectors import VectorIndex
from memory.types import Change, Note, NoteDraft, SaveResult, Scope, SearchHit

_log = logging.getLogger(__name__)


class NoteDatabase(SqlDatabase, Database, Protocol):
    """An engine's database as the note store uses it: neutral SQL, and what `NoteStore.db`
    offers (health, backups) to those holding the store."""


class SqlNoteStore:
    """All note reads and writes of lorebot (`memory.stores.notes.NoteStore`)."""

    def __init__(
        self,
        db: NoteDatabase,
        engine: NoteEngine,
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
        self.engine = engine
        self.clock = clock
        self.max_note_bytes = max_note_bytes
        self.vectors = vectors
        self.fusion: Method = fusion
        self.time = db.dialect.time
        self._indexes = ScopeIndexes(
            engine, clock, self.time, max_lines=index_max_lines, max_bytes=index_max_bytes
        )

    def validate(self, draft: NoteDraft) -> NoteDraft:
        """Check a draft before anything is stored; raise `InvalidInput` saying why."""
        return validate_draft(draft, self.max_note_bytes, self.secrets)

    # --- reads ----------------------------------------------------------------------

    async def fetch(self, scope: Scope, topic: str) -> Note | None:
        found = await self._select("WHERE scope = ? AND topic = ?", (str(scope), topic))
        return found[0] if found else None

    async def state_in(self, tx: Transaction, scope: Scope, topic: str) -> dict[str, object] | None:
        """The stored state of one note as its change sets record it, or None."""
        return await self._state(self.db.session_of(tx), scope, topic)

    async def content_fingerprint(self, scope: Scope, topic: str) -> str | None:
        """A hash of one note's content (None when there is no such note), for a card to
        be checked against when it is decided."""
        async with self.db.reading() as sql:
            return content_fingerprint(await self._state(sql, scope, topic))

    async def read(self, visibility: Visibility, topic: str) -> list[Note]:
        """The live notes named `topic` that `visibility` may read, bumping their access."""
        where, params = visibility_sql(visibility)
        found = await self._select(
            f"WHERE topic = ? AND ({where}) AND {LIVE} ORDER BY scope",
            (topic, *params, self._now()),
        )
        await self._bump(found)
        return found

    async def list_notes(self, scope: Scope | None = None) -> list[Note]:
        """Every live note, or those of one scope, by scope then topic."""
        if scope is None:
            return await self._select(f"WHERE {LIVE} ORDER BY scope, topic", (self._now(),))
        return await self._select(
            f"WHERE scope = ? AND {LIVE} ORDER BY topic", (str(scope), self._now())
        )

    async def list_scopes(self) -> list[Scope]:
        async with self.db.reading() as sql:
            found = await sql.rows("SELECT DISTINCT scope FROM notes ORDER BY scope")
        return [Scope.parse(r["scope"]) for r in found]

    async def list_visible(self, visibility: Visibility) -> list[Note]:
        """Every live note `visibility` may read, by scope then topic."""
        where, params = visibility_sql(visibility)
        return await self._select(
            f"WHERE ({where}) AND {LIVE} ORDER BY scope, topic", (*params, self._now())
        )

    async def index(self, scope: Scope, *, public_only: bool = False) -> ScopeIndex:
        """The index of one scope (only its public notes when `public_only`).

        Where the engine tells when another connection wrote (`NoteEngine.data_version`),
        indexes are cached until the notes change: a write through this store clears them,
        and so does a commit by another process. Elsewhere each is read fresh."""
        async with self.db.reading() as sql:
            [found] = await self._indexes.get(sql, [(scope, public_only)])
        return found

    async def indexes_for(self, visibility: Visibility) -> list[ScopeIndex]:
        """The indexes a conversation sees, in priority order, within the per-turn cap."""
        async with self.db.reading() as sql:
            statements = self.index_statements(visibility)
            found = await sql.batch(statements) if statements else []
            return await self.indexes_from(sql, visibility, found)

    def index_statements(self, visibility: Visibility) -> list[Statement]:
        """What `indexes_for` first reads, to be sent along with a turn's other reads."""
        return self._indexes.statements(wanted_by(visibility))

    async def indexes_from(
        self, sql: Session, visibility: Visibility, found: Sequence[Result]
    ) -> list[ScopeIndex]:
        """`indexes_for`, from what `index_statements` read (reading more with `sql` only
        when cached indexes are stale)."""
        indexes = await self._indexes.finish(sql, wanted_by(visibility), found)
        return fit_turn([i for i in indexes if i.lines or i.hidden])

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
        how rare it is. The engine ranks (`NoteEngine.search`)."""
        if k <= 0:
            return []
        found = await self.engine.search(
            query,
            visibility,
            k=k,
            snippets=snippets,
            vector=vector,
            vectors=self.vectors,
            fusion=self.fusion,
        )
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
        sql = self.db.session_of(tx)
        scope, topic = draft.scope, draft.topic
        before_index = await self._indexes.build(sql, scope, False)
        before = await self._state(sql, scope, topic, lock=True)
        after = state_after(draft, before, actor, to_utc_text(self.clock()))
        change_id: int | None = None
        if before is None or not same_content(before, after):
            await self.engine.write_state(sql, scope, topic, after, new=before is None)
            self._changed()
            change_id = await note_changes.record_change(
                sql,
                scope,
                topic,
                "create" if before is None else "update",
                before,
                after,
                actor,
                reason,
                proposal_id,
                self._now(),
            )
        [note] = await self._notes(sql, "WHERE scope = ? AND topic = ?", (str(scope), topic))
        after_index = await self._indexes.build(sql, scope, False)
        shown = {line.split(":", 1)[0][2:] for line in after_index.lines}
        left = sorted({line.split(":", 1)[0][2:] for line in before_index.lines} - shown)
        if left:
            _log.info("save of %s/%s moved %s out of the index", scope, topic, left)
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
        sql = self.db.session_of(tx)
        deleted = await self.engine.delete_notes(
            sql, "scope = ? AND topic = ?", (str(scope), topic)
        )
        if not deleted:
            raise NotFound(f"there is no note {topic!r} in {scope}")
        self._changed()
        before = state_of(deleted[0], sql.dialect.time_text)
        return await note_changes.record_change(
            sql, scope, topic, "forget", before, None, actor, reason, proposal_id, self._now()
        )

    async def revert(self, change_id: int, *, actor: str, reason: str = "") -> Change:
        """Restore the note a change touched to its state before that change; for a change
        of many notes (an import), each of its notes that no later change touched. Refused
        when that would clobber later work (`note_changes.revert`)."""
        async with self.db.transaction() as sql:
            new_id = await note_changes.revert(
                sql, self.engine, change_id, actor, reason, self._now()
            )
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
        changed nothing). `labels` name where each draft came from (e.g. a file and line)
        for error messages; `progress(written, total)` is called as notes are written."""
        try:
            return await self.engine.import_drafts(
                drafts,
                self.validate,
                actor=actor,
                now=self.clock(),
                labels=labels,
                progress=progress,
            )
        finally:
            self._changed()

    async def purge_expired(self) -> int:
        """Delete notes past their expiry; their last state stays in the change sets."""
        now = self._now()
        async with self.db.transaction() as sql:
            expired = await self.engine.delete_notes(
                sql, "expires_at IS NOT NULL AND expires_at <= ?", (now,)
            )
            for row in expired:
                await note_changes.record_change(
                    sql,
                    Scope.parse(row["scope"]),
                    row["topic"],
                    "forget",
                    state_of(row, sql.dialect.time_text),
                    None,
                    "lorebot",
                    "expired",
                    None,
                    now,
                )
            if expired:
                self._changed()
        return len(expired)

    # --- internals ------------------------------------------------------------------

    def _now(self) -> object:
        """The time now, as the engine keeps times."""
        return self.time(self.clock())

    def _changed(self) -> None:
        """Called by every write: cached indexes and ranking figures may no longer be right."""
        self._indexes.clear()
        self.engine.changed()

    async def _state(
        self, sql: Session, scope: Scope, topic: str, *, lock: bool = False
    ) -> dict[str, object] | None:
        """The kept state of one note (locked until the transaction ends when `lock`)."""
        row = await sql.row(
            "SELECT * FROM notes WHERE scope = ? AND topic = ? "
            + (sql.dialect.lock_rows("notes") if lock else ""),
            (str(scope), topic),
        )
        return None if row is None else state_of(row, sql.dialect.time_text)

    async def _select(self, where: str, params: Params) -> list[Note]:
        await self.engine.flush()  # show the access counts of reads so far
        async with self.db.reading() as sql:
            return await self._notes(sql, where, params)

    async def _notes(self, sql: Session, where: str, params: Params) -> list[Note]:
        found = await sql.rows(f"SELECT {NOTE_COLUMNS} FROM notes {where}", params)
        return [note_from_row(r, sql.dialect.read_time) for r in found]

    async def _bump(self, notes: Iterable[Note]) -> None:
        """Count a read of each note (`NoteEngine.write_soon`: it may wait)."""
        ids = [n.id for n in notes]
        if ids:
            await self.engine.write_soon(
                "UPDATE notes SET access_count = access_count + 1, last_access = ? "
                f"WHERE id IN ({marks(len(ids))})",
                (self._now(), *ids),
            )
