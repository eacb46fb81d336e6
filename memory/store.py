"""The note store: saving, forgetting, reading, recall and change sets.

Every write is one transaction that also records a change set, so any change can be
reverted. Every read that serves a conversation takes a `Visibility` and filters in SQL.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import aiosqlite

from memory import rows
from memory.bulk_writes import (
    import_page_cache,
    on_writer_thread,
    quick_gil_handoffs,
    rows_per_statement,
)
from memory.clock import Clock, utc_now
from memory.db import Database, to_db_time
from memory.errors import Conflict, InvalidInput, NotFound
from memory.fts import bm25_call, match_terms, ranking_terms
from memory.fusion import Method, fuse
from memory.index import INDEX_MAX_BYTES, INDEX_MAX_LINES, ScopeIndex, build_index, fit_turn
from memory.redaction import find_secret, mask_known
from memory.term_stats import TermStats
from memory.types import (
    SUMMARY_MAX_CHARS,
    Change,
    Note,
    NoteDraft,
    SaveResult,
    Scope,
    SearchHit,
    index_line,
    validate_topic,
)
from memory.vectors import NOTE, VectorIndex
from memory.visibility import Visibility, scope_keys, scope_match

_log = logging.getLogger(__name__)

DEFAULT_MAX_NOTE_BYTES = 4096
# How many ranked notes of a scope are considered for its index; more never fit 40 lines.
_INDEX_CANDIDATES = 400
# bm25 column weights of topic, summary and body, relative to each other: scaled so the
# heaviest counts a word as plain bm25 does (`bm25_call`; scope keys are never matched by
# words). Chosen by `benchmarks/recall_eval.py --half first --weight-grid`: the best MRR@10
# on that half of the weightings at or above plain bm25 at hit@5, hit@10 and MRR@10 there
# and on recall_quality.py's notes. Every column keeps a weight, so a note found by its
# topic or body words alone scores.
NOTE_WEIGHTS = (1.0, 1.5, 1.0)
_BM25 = bm25_call("notes_fts", NOTE_WEIGHTS)
# Candidates beyond k, for expired notes the maintenance job has not purged yet; when more
# than these drop out, the ranking is read again further down.
_SPARE = 5
# Below this, a bm25 score comes only from words held by about half the notes or more,
# which bm25 weighs 1e-6 (at most ~2e-6 per word and note): the order of such notes needs
# every word of the query.
_UNWEIGHED_SCORE = 1e-3
# Candidates each ranking brings to a fusion.
FUSION_POOL = 20
_IMPORT_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class ImportResult:
    created: int
    updated: int
    unchanged: int


class NoteStore:
    """All note reads and writes of lorebot."""

    def __init__(
        self,
        db: Database,
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
        self._index_caps = {"max_lines": index_max_lines, "max_bytes": index_max_bytes}
        self.term_stats = TermStats(db)
        self.vectors = vectors
        self.fusion: Method = fusion
        self._indexes: dict[tuple[Scope, bool], ScopeIndex] = {}
        self._data_version: object = None

    # --- validation -----------------------------------------------------------------

    def validate(self, draft: NoteDraft) -> NoteDraft:
        """Check a draft before anything is stored; raise `InvalidInput` saying why."""
        validate_topic(draft.topic)
        summary = " ".join(draft.summary.split())
        if not summary:
            raise InvalidInput("a note needs a one-line summary")
        if len(summary) > SUMMARY_MAX_CHARS:
            raise InvalidInput(
                f"the summary is {len(summary)} characters; keep it under {SUMMARY_MAX_CHARS} "
                "and put the details in the body"
            )
        size = len(draft.body.encode())
        if size > self.max_note_bytes:
            raise InvalidInput(
                f"the note is {size} bytes, over the limit of {self.max_note_bytes}: split it "
                f"into smaller notes with their own topics (for example {draft.topic}-part-1 "
                f"and {draft.topic}-part-2), each under {self.max_note_bytes} bytes"
            )
        text = f"{draft.topic}\n{summary}\n{draft.body}"
        secret = find_secret(text)
        if secret is None and mask_known(text, self.secrets) != text:
            secret = "one of lorebot's configured secrets"
        if secret is not None:
            raise InvalidInput(
                f"not saved: the note contains {secret}. Credentials do not belong in "
                "notes; store them in a secret manager and note where to find them"
            )
        if not 0.0 <= draft.confidence <= 1.0:
            raise InvalidInput("confidence must be between 0 and 1")
        return draft if summary == draft.summary else replace(draft, summary=summary)

    # --- reads ----------------------------------------------------------------------

    async def get(self, scope: Scope, topic: str) -> Note | None:
        await self.db.flush()  # show the access counts of reads so far
        row = await self._fetch_row(self.db.conn, scope, topic)
        return None if row is None else rows.note_from_row(row)

    async def state_in(
        self, conn: aiosqlite.Connection, scope: Scope, topic: str
    ) -> dict[str, object] | None:
        """The stored state of one note as its change sets record it, or None."""
        row = await self._fetch_row(conn, scope, topic)
        return None if row is None else rows.state_of(row)

    async def content_fingerprint(self, scope: Scope, topic: str) -> str | None:
        """A hash of one note's content (None when there is no such note), for a card to
        be checked against when it is decided."""
        return rows.content_fingerprint(await self.state_in(self.db.conn, scope, topic))

    async def read(self, visibility: Visibility, topic: str) -> list[Note]:
        """The live notes named `topic` that `visibility` may read, bumping their access."""
        where, params = _visibility_sql(visibility)
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
            sql = f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE {_LIVE} ORDER BY scope, topic"
            return await self._select(sql, (now,))
        sql = f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE scope = ? AND {_LIVE} ORDER BY topic"
        return await self._select(sql, (str(scope), now))

    async def list_scopes(self) -> list[Scope]:
        async with self.db.conn.execute("SELECT DISTINCT scope FROM notes ORDER BY scope") as cur:
            return [Scope.parse(row[0]) async for row in cur]

    async def list_visible(self, visibility: Visibility) -> list[Note]:
        """Every live note `visibility` may read, by scope then topic."""
        where, params = _visibility_sql(visibility)
        sql = (
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE ({where}) AND {_LIVE} "
            "ORDER BY scope, topic"
        )
        return await self._select(sql, (*params, to_db_time(self.clock())))

    async def index(self, scope: Scope, *, public_only: bool = False) -> ScopeIndex:
        """The index of one scope (only its public notes when `public_only`).

        Indexes are cached until the notes change: a write through this store clears them,
        and so does a commit by another process (SQLite's `data_version` moves)."""
        await self._forget_stale_indexes()
        key = (scope, public_only)
        cached = self._indexes.get(key)
        if cached is None:
            cached = self._indexes[key] = await self._index(self.db.conn, scope, public_only)
        return cached

    async def _forget_stale_indexes(self) -> None:
        version = await self.db.scalar("PRAGMA data_version")
        if version != self._data_version:
            self._data_version = version
            self._indexes.clear()

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
        terms = ranking_terms(query)
        words = _Words(match_terms(await self.term_stats.weighed(terms)), match_terms(terms))
        if vector is None and self.vectors is not None and self.vectors.enabled:
            vector = await self.vectors.query_vector(query)
        if vector is not None:
            found = await self._hybrid(words, vector, visibility, k, snippets)
        elif words.every is None:
            return []
        else:
            found = await self._by_words(words, visibility, k, snippets)
        if bump:
            await self._bump([hit.note for hit in found])
        return found

    async def _hybrid(
        self,
        words: _Words,
        vector: Sequence[float],
        visibility: Visibility,
        k: int,
        snippets: bool,
    ) -> list[SearchHit]:
        assert self.vectors is not None
        pool = max(k * 4, FUSION_POOL)
        # The vector query runs on the reader while the word query runs on the writer.
        nearest = asyncio.ensure_future(
            self.vectors.nearest(NOTE, vector, visibility, pool, on_reader=True)
        )
        try:
            by_words = await self._ranked(words, visibility, pool)
        finally:
            near = await nearest
        notes = {note.id: note for note, _ in by_words}
        keyword = [(note.id, score) for note, score in by_words]
        ranked = fuse(keyword, near, self.fusion)
        # Nearest vectors may belong to expired notes: check every candidate, not a prefix.
        missing = [i for i, _ in ranked if i not in notes]
        notes.update(await self._visible_by_id(missing, visibility))
        found = [(notes[i], score) for i, score in ranked if i in notes][:k]
        marked = {}
        if snippets and words.shown is not None:
            marked = await self._snippets(words.shown, [n.id for n, _ in found])
        return [SearchHit(n, score, marked.get(n.id) or n.summary) for n, score in found]

    async def _visible_by_id(self, ids: list[int], visibility: Visibility) -> dict[int, Note]:
        """The live notes among `ids` that `visibility` may read, by id."""
        if not ids:
            return {}
        where, params = _visibility_sql(visibility)
        marks = ", ".join("?" for _ in ids)
        sql = (
            f"SELECT {rows.NOTE_COLUMNS} FROM notes WHERE id IN ({marks}) AND ({where}) AND {_LIVE}"
        )
        # Not `_select`: a search must not flush deferred access counts (a write).
        async with self.db.conn.execute(sql, (*ids, *params, to_db_time(self.clock()))) as cur:
            return {r["id"]: rows.note_from_row(r) for r in await cur.fetchall()}

    async def _by_words(
        self, words: _Words, visibility: Visibility, k: int, snippets: bool
    ) -> list[SearchHit]:
        ranked = await self._ranked(words, visibility, k)
        ids = [n.id for n, _ in ranked]
        marked = await self._snippets(words.shown, ids) if snippets and words.shown else {}
        return [SearchHit(note, -score, marked.get(note.id, "")) for note, score in ranked]

    async def _ranked(
        self, words: _Words, visibility: Visibility, k: int
    ) -> list[tuple[Note, float]]:
        """The bm25 top k: by the weighed words when they find k notes that match one of
        them for real (the other words would only add millionths), else by every word, as
        plain bm25 would."""
        ranked: list[tuple[Note, float]] = []
        if words.weighed is not None:
            ranked = await self._ranked_by_words(words.weighed, visibility, k)
            if len(ranked) == k and -ranked[-1][1] > _UNWEIGHED_SCORE:
                return ranked
        if words.every is not None and words.every != words.weighed:
            ranked = await self._ranked_by_words(words.every, visibility, k)
        return ranked

    async def _ranked_by_words(
        self, words: str, visibility: Visibility, k: int
    ) -> list[tuple[Note, float]]:
        """The k best live notes matching `words` that `visibility` may read, with their
        bm25 scores (lower is better)."""
        where, params = _visibility_sql(visibility, alias="n.")
        match = f"{scope_match(visibility)} AND {words}"
        now = to_db_time(self.clock())
        sql = (
            f"WITH top AS (SELECT rowid AS id, {_BM25} AS score FROM notes_fts "
            "WHERE notes_fts MATCH ? ORDER BY score LIMIT ?) "
            f"SELECT {_prefixed('n.')}, top.score, ({where}) AND "
            "(n.expires_at IS NULL OR n.expires_at > ?) AS readable "
            "FROM top JOIN notes n ON n.id = top.id ORDER BY top.score"
        )
        # The MATCH admits the visible scopes already; the SELECT re-checks visibility and
        # drops expired notes. Should more than the spare candidates drop out, the ranking
        # is read again further down, so no match is ever lost to them.
        limit = k + _SPARE
        while True:
            async with self.db.conn.execute(sql, (match, limit, *params, now)) as cursor:
                found = list(await cursor.fetchall())
            kept = [(rows.note_from_row(r), float(r["score"])) for r in found if r["readable"]]
            if len(kept) >= k or len(found) < limit:
                return kept[:k]
            limit *= 4

    async def _snippets(self, words: str, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        async with self.db.conn.execute(
            "SELECT rowid, snippet(notes_fts, -1, '**', '**', '…', 16) FROM notes_fts "
            f"WHERE notes_fts MATCH ? AND rowid IN ({marks})",
            (words, *ids),
        ) as cursor:
            return {row[0]: row[1] for row in await cursor.fetchall()}

    async def history(
        self, scope: Scope | None = None, topic: str | None = None, *, limit: int = 50
    ) -> list[Change]:
        """Change sets, newest first, optionally of one scope or one note."""
        clauses, params = [], []
        if scope is not None:
            clauses.append("scope = ?")
            params.append(str(scope))
        if topic is not None:
            clauses.append("topic = ?")
            params.append(topic)
        where = " AND ".join(clauses) or "1"
        sql = f"SELECT * FROM note_changes WHERE {where} ORDER BY id DESC LIMIT ?"
        async with self.db.conn.execute(sql, (*params, limit)) as cursor:
            return [rows.change_from_row(r) for r in await cursor.fetchall()]

    async def changes_between(self, scope: Scope, start: datetime, end: datetime) -> list[Change]:
        """Change sets of one scope in [start, end), oldest first."""
        async with self.db.conn.execute(
            "SELECT * FROM note_changes WHERE scope = ? AND created_at >= ? AND created_at < ? "
            "ORDER BY id",
            (str(scope), to_db_time(start), to_db_time(end)),
        ) as cursor:
            return [rows.change_from_row(r) for r in await cursor.fetchall()]

    async def get_change(self, change_id: int) -> Change:
        async with self.db.conn.execute(
            "SELECT * FROM note_changes WHERE id = ?", (change_id,)
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise NotFound(f"there is no change {change_id}")
        return rows.change_from_row(row)

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
        async with self.db.transaction() as conn:
            return await self.save_in(conn, draft, actor, reason, proposal_id)

    async def save_in(
        self,
        conn: aiosqlite.Connection,
        draft: NoteDraft,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> SaveResult:
        """`save` inside the caller's transaction; `draft` must be validated."""
        before_index = await self._index(conn, draft.scope, False)
        change_id, created = await self._upsert(conn, draft, actor, reason, proposal_id)
        row = await self._fetch_row(conn, draft.scope, draft.topic)
        assert row is not None
        after_index = await self._index(conn, draft.scope, False)
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
        async with self.db.transaction() as conn:
            change_id = await self.forget_in(conn, scope, topic, actor, reason, proposal_id)
        return await self.get_change(change_id)

    async def forget_in(
        self,
        conn: aiosqlite.Connection,
        scope: Scope,
        topic: str,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> int:
        """`forget` inside the caller's transaction; returns the change id."""
        row = await self._fetch_row(conn, scope, topic)
        if row is None:
            raise NotFound(f"there is no note {topic!r} in {scope}")
        self._changed()
        await conn.execute("DELETE FROM notes WHERE id = ?", (row["id"],))
        return await self._record(
            conn, scope, topic, "forget", rows.state_of(row), None, actor, reason, proposal_id
        )

    async def revert(self, change_id: int, *, actor: str, reason: str = "") -> Change:
        """Restore the note a change touched to its state before that change.

        Refused when the note changed again since, so a revert never clobbers later work."""
        target = await self.get_change(change_id)
        if target.reverted_by is not None:
            raise Conflict(
                f"change {change_id} was already reverted by change {target.reverted_by}"
            )
        async with self.db.transaction() as conn:
            row = await self._fetch_row(conn, target.scope, target.topic)
            current = None if row is None else rows.state_of(row)
            if not rows.same_content(current, target.after):
                raise Conflict(
                    f"{target.scope}/{target.topic} changed after change {change_id}; "
                    "revert the later changes first (see `lorebot notes history`)"
                )
            if target.before is None:
                self._changed()
                await conn.execute(
                    "DELETE FROM notes WHERE scope = ? AND topic = ?",
                    (str(target.scope), target.topic),
                )
            else:
                await self._write_state(
                    conn, target.scope, target.topic, target.before, new=current is None
                )
            new_id = await self._record(
                conn, target.scope, target.topic, "revert", current, target.before,
                actor, reason or f"revert of change {change_id}", None,
            )  # fmt: skip
            await conn.execute(
                "UPDATE note_changes SET reverted_by = ? WHERE id = ?", (new_id, change_id)
            )
        return await self.get_change(new_id)

    async def undo(self, actor: str, *, visibility: Visibility | None = None) -> Change:
        """Revert the latest change `actor` made that is not itself a revert or reverted,
        optionally only among the changes `visibility` may see: in its public-only scopes,
        a change that touched a private note is invisible, so undo never reaches it."""
        scope_filter, params = "", [actor]
        if visibility is not None:
            scope_filter, seen = _change_visibility_sql(visibility)
            scope_filter = f"AND ({scope_filter})"
            params += list(seen)
        async with self.db.conn.execute(
            "SELECT id FROM note_changes WHERE actor = ? AND action != 'revert' "
            f"AND reverted_by IS NULL {scope_filter} ORDER BY id DESC LIMIT 1",
            params,
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise NotFound("there is nothing of yours to undo")
        return await self.revert(row[0], actor=actor, reason=f"undo of change {row[0]}")

    async def import_drafts(
        self,
        drafts: Sequence[NoteDraft],
        *,
        actor: str,
        labels: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Save many notes in one transaction: all of them or, on any error, none. Each
        change still gets its change set.

        Each chunk is written, by a few statements that run without the GIL, while the
        next chunk is validated. `labels` name where each draft came from (e.g. a file and
        line) for error messages; `progress(written, total)` is called as chunks are
        written."""
        counts = {"create": 0, "update": 0, "unchanged": 0}
        now = to_db_time(self.clock())
        self._changed()
        # A topic repeated in the file updates a note this import created; the update
        # trigger would unindex text the chunk's index below has not indexed yet, so those
        # rows are written after every chunk, in file order.
        created: set[tuple[str, str]] = set()
        repeats: list[tuple[object, ...]] = []
        with quick_gil_handoffs():
            async with self.db.transaction() as conn, import_page_cache(conn):
                states = await self._states(conn, [(_scope_text(d.scope), d.topic) for d in drafts])
                writes: list[asyncio.Future[None]] = []
                try:
                    for start in range(0, len(drafts), _IMPORT_CHUNK):
                        chunk = drafts[start : start + _IMPORT_CHUNK]
                        new, updated, changes = self._import_rows(
                            chunk, start, labels, states, actor, now, counts, created, repeats
                        )
                        write = functools.partial(
                            _store_import_chunk, new=new, updated=updated, changes=changes
                        )
                        written = on_writer_thread(conn, write)
                        if progress is not None:
                            written.add_done_callback(functools.partial(
                                _report_written, progress, start + len(chunk), len(drafts)
                            ))  # fmt: skip
                        writes.append(written)
                        await asyncio.sleep(0)  # the chunk reaches the writer now
                finally:
                    await asyncio.gather(*writes, return_exceptions=True)
                for write_done in writes:
                    write_done.result()  # raise the first failed write, if any
                if repeats:
                    await conn.executemany(_UPSERT_NOTE, repeats)
        return ImportResult(counts["create"], counts["update"], counts["unchanged"])

    def _import_rows(
        self,
        chunk: Sequence[NoteDraft],
        offset: int,
        labels: Sequence[str],
        states: dict[tuple[str, str], dict[str, object]],
        actor: str,
        now: str,
        counts: dict[str, int],
        created: set[tuple[str, str]],
        repeats: list[tuple[object, ...]],
    ) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[tuple[object, ...]]]:
        """Validate one chunk and build its rows: new notes, updated notes and change sets;
        the note rows of topics this import already created go to `repeats` instead."""
        new: list[tuple[object, ...]] = []
        updated: list[tuple[object, ...]] = []
        changes: list[tuple[object, ...]] = []
        for number, item in enumerate(chunk, start=offset):
            try:
                draft = self.validate(item)
            except InvalidInput as exc:
                label = labels[number] if number < len(labels) else f"note {number + 1}"
                raise InvalidInput(f"{label}: {exc}") from None
            key = (_scope_text(draft.scope), draft.topic)
            before = states.get(key)
            after = self._after(draft, before, actor, now)
            if before is not None and rows.same_content(before, after):
                counts["unchanged"] += 1
                continue
            states[key] = after
            action = "create" if before is None else "update"
            counts[action] += 1
            keys = scope_keys(draft.scope, draft.private)
            row = (*key, keys, *_STATE_VALUES(after))
            if key in created:
                repeats.append(row)
            elif before is None:
                new.append(row)
                created.add(key)
            else:
                updated.append(row)
            changes.append((*key, action, rows.dump_state(before), rows.dump_state(after),
                            actor, "import", None, now))  # fmt: skip
        return new, updated, changes

    async def _states(
        self, conn: aiosqlite.Connection, keys: list[tuple[str, str]]
    ) -> dict[tuple[str, str], dict[str, object]]:
        """The stored states of many notes in one query."""
        async with conn.execute(
            "SELECT n.* FROM json_each(?) AS k JOIN notes AS n ON "
            "n.scope = json_extract(k.value, '$[0]') AND n.topic = json_extract(k.value, '$[1]')",
            (json.dumps(keys),),
        ) as cursor:
            return {(r["scope"], r["topic"]): rows.state_of(r) for r in await cursor.fetchall()}

    async def purge_expired(self) -> int:
        """Delete notes past their expiry; their last state stays in the change sets."""
        now = to_db_time(self.clock())
        async with self.db.transaction() as conn:
            async with conn.execute(
                "SELECT * FROM notes WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            ) as cursor:
                expired = list(await cursor.fetchall())
            self._changed()
            for row in expired:
                await conn.execute("DELETE FROM notes WHERE id = ?", (row["id"],))
                await self._record(
                    conn, Scope.parse(row["scope"]), row["topic"], "forget",
                    rows.state_of(row), None, "lorebot", "expired", None,
                )  # fmt: skip
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
        row = await self._fetch_row(conn, draft.scope, draft.topic)
        before = None if row is None else rows.state_of(row)
        after = self._after(draft, before, actor, to_db_time(self.clock()))
        if before is not None and rows.same_content(before, after):
            return None, False
        await self._write_state(conn, draft.scope, draft.topic, after, new=before is None)
        action = "create" if before is None else "update"
        change_id = await self._record(
            conn, draft.scope, draft.topic, action, before, after, actor, reason, proposal_id
        )
        return change_id, before is None

    @staticmethod
    def _after(
        draft: NoteDraft, before: dict[str, object] | None, actor: str, now: str
    ) -> dict[str, object]:
        """The state a save of `draft` leaves, keeping the creation time of `before`."""
        return {
            "summary": draft.summary,
            "body": draft.body,
            "category": draft.category.value,
            "private": int(draft.private),
            "pinned": int(draft.pinned),
            "author": draft.author or actor,
            "source": draft.source,
            "confidence": draft.confidence,
            "created_at": now if before is None else before["created_at"],
            "updated_at": now,
            "expires_at": None if draft.expires_at is None else to_db_time(draft.expires_at),
        }

    async def _write_state(
        self,
        conn: aiosqlite.Connection,
        scope: Scope,
        topic: str,
        state: dict[str, Any],
        *,
        new: bool,
    ) -> None:
        """Insert or update one note. Triggers keep the FTS index in step with updates and
        deletes; a new note is indexed here (imports index theirs in bulk, 4x faster)."""
        self._changed()
        keys = scope_keys(scope, bool(state["private"]))
        await conn.execute(
            _UPSERT_NOTE, (str(scope), topic, keys, *(state[c] for c in rows.STATE_COLUMNS))
        )
        if new:
            await conn.execute(f"{_INDEX_NOTES} WHERE scope = ? AND topic = ?", (str(scope), topic))

    async def _record(
        self,
        conn: aiosqlite.Connection,
        scope: Scope,
        topic: str,
        action: str,
        before: dict[str, object] | None,
        after: dict[str, object] | None,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> int:
        cursor = await conn.execute(
            _INSERT_CHANGE,
            (
                str(scope), topic, action, rows.dump_state(before), rows.dump_state(after),
                actor, reason, proposal_id, to_db_time(self.clock()),
            ),
        )  # fmt: skip
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    async def _fetch_row(self, conn: aiosqlite.Connection, scope: Scope, topic: str) -> Any | None:
        async with conn.execute(
            "SELECT * FROM notes WHERE scope = ? AND topic = ?", (str(scope), topic)
        ) as cursor:
            row: Any | None = await cursor.fetchone()
        return row

    async def _index(
        self, conn: aiosqlite.Connection, scope: Scope, public_only: bool
    ) -> ScopeIndex:
        now = to_db_time(self.clock())
        private_filter = "AND private = 0" if public_only else ""
        async with conn.execute(
            f"SELECT topic, summary FROM notes WHERE scope = ? {private_filter} AND {_LIVE} "
            "ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ?",
            (str(scope), now, _INDEX_CANDIDATES),
        ) as cursor:
            ranked = [index_line(topic, summary) for topic, summary in await cursor.fetchall()]
        index = build_index(scope, ranked, **self._index_caps)
        if len(ranked) == _INDEX_CANDIDATES:
            total = await self.db.scalar(
                f"SELECT count(*) FROM notes WHERE scope = ? {private_filter} AND {_LIVE}",
                (str(scope), now),
            )
            index = ScopeIndex(scope, index.lines, int(total) - len(index.lines))
        return index

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


@dataclass(frozen=True, slots=True)
class _Words:
    """A query's FTS5 expressions: of the words bm25 weighs here, and of every word."""

    weighed: str | None
    every: str | None

    @property
    def shown(self) -> str | None:
        """The words a snippet marks."""
        return self.weighed or self.every


_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_INSERT_NOTE = (
    f"INSERT INTO notes (scope, topic, scope_keys, {', '.join(rows.STATE_COLUMNS)}) "
    f"VALUES (?, ?, ?, {', '.join('?' for _ in rows.STATE_COLUMNS)})"
)
_UPSERT_NOTE = (
    f"{_INSERT_NOTE} ON CONFLICT (scope, topic) DO UPDATE SET scope_keys = excluded.scope_keys, "
    + ", ".join(f"{c} = excluded.{c}" for c in rows.STATE_COLUMNS)
)
_INDEX_NOTES = (
    "INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys) "
    "SELECT id, topic, summary, body, scope_keys FROM notes"
)
_INSERT_CHANGE = (
    "INSERT INTO note_changes (scope, topic, action, before_json, after_json, actor, reason, "
    "proposal_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_NOTE_COLUMNS = 3 + len(rows.STATE_COLUMNS)
_CHANGE_COLUMNS = 9
_STATE_VALUES = operator.itemgetter(*rows.STATE_COLUMNS)


@functools.lru_cache(maxsize=4096)
def _scope_text(scope: Scope) -> str:
    return str(scope)


@functools.cache
def _many_rows(sql: str, rows: int) -> str:
    """`sql`, an INSERT of one row of VALUES, inserting `rows` rows."""
    head, values = sql.split(" VALUES ", 1)
    values, tail = values.split(")", 1)
    return f"{head} VALUES {', '.join([values + ')'] * rows)}{tail}"


def _report_written(
    progress: Callable[[int, int], None], written: int, total: int, _: asyncio.Future[None]
) -> None:
    """Tell `progress` that a chunk's write ended."""
    progress(written, total)


def _store_import_chunk(
    raw: Any,
    new: list[tuple[object, ...]],
    updated: list[tuple[object, ...]],
    changes: list[tuple[object, ...]],
) -> None:
    """Write one chunk of an import and index its new notes, on the writer's own thread:
    a few statements, each of which runs without the GIL. New notes are plain inserts,
    which skip the upsert's conflict handling."""
    last = int(raw.execute("SELECT coalesce(max(id), 0) FROM notes").fetchone()[0])
    for sql, found, columns in ((_INSERT_NOTE, new, _NOTE_COLUMNS),
                                (_UPSERT_NOTE, updated, _NOTE_COLUMNS),
                                (_INSERT_CHANGE, changes, _CHANGE_COLUMNS)):  # fmt: skip
        step = rows_per_statement(raw, columns)
        for start in range(0, len(found), step):
            part = found[start : start + step]
            raw.execute(_many_rows(sql, len(part)), [value for row in part for value in row])
    raw.execute(f"{_INDEX_NOTES} WHERE id > ?", (last,))


def _prefixed(alias: str) -> str:
    return ", ".join(alias + c.strip() for c in rows.NOTE_COLUMNS.split(","))


def _change_visibility_sql(visibility: Visibility) -> tuple[str, tuple[str, ...]]:
    """A WHERE fragment admitting the change sets `visibility` may see: in public-only
    scopes, only changes that touched no private state."""
    public = (
        "coalesce(json_extract(before_json, '$.private'), 0) = 0 "
        "AND coalesce(json_extract(after_json, '$.private'), 0) = 0"
    )
    return _scopes_sql(visibility, "scope", public)


def _visibility_sql(visibility: Visibility, alias: str = "") -> tuple[str, tuple[str, ...]]:
    """A WHERE fragment admitting exactly the notes `visibility` may read."""
    return _scopes_sql(visibility, f"{alias}scope", f"{alias}private = 0")


def _scopes_sql(visibility: Visibility, column: str, public: str) -> tuple[str, tuple[str, ...]]:
    """`column` in the full scopes, or in the public-only scopes where `public` holds."""
    parts: list[str] = []
    params: list[str] = []
    if visibility.full:
        parts.append(f"{column} IN ({', '.join('?' for _ in visibility.full)})")
        params += [str(s) for s in visibility.full]
    if visibility.public_only:
        marks = ", ".join("?" for _ in visibility.public_only)
        parts.append(f"({column} IN ({marks}) AND {public})")
        params += [str(s) for s in visibility.public_only]
    if not parts:
        return "0", ()
    return " OR ".join(parts), tuple(params)
