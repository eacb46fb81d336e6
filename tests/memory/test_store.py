"""The note store: saves, change sets, indexes and their caps, expiry, schema safety (on
both engines, but for what only SQLite has: its file, its pragmas, its deferred writes)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memory import (
    Category,
    Conflict,
    InvalidInput,
    NoteDraft,
    NotFound,
    SchemaTooNew,
    Scope,
    Viewer,
    visibility_for,
)
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.migrations import SCHEMA_VERSION
from memory.sqlite.notes import SqliteNoteStore
from memory.stores.notes import NoteStore
from tests.support.clock import FakeClock
from tests.support.engines import OpenAgain

CHANNEL = Scope.parse("channel:slack/C1")
ALICE = Scope.parse("user:slack/UALICE")


@pytest.fixture
def store(engine_stores: Any) -> NoteStore:
    """The note store on each engine."""
    notes: NoteStore = engine_stores.notes
    return notes


@pytest.fixture
async def sqlite_store(db_path: Path, clock: FakeClock) -> AsyncIterator[SqliteNoteStore]:
    db = await SqliteDatabase.open(db_path)
    try:
        yield SqliteNoteStore(db, clock=clock)
    finally:
        await db.close()


def draft(topic: str = "staging-db", summary: str = "staging DB is pg-stage-2", **kw: object):
    return NoteDraft(scope=kw.pop("scope", CHANNEL), topic=topic, summary=summary, **kw)  # type: ignore[arg-type]


async def test_save_then_update_then_identical_save_changes_nothing(store: NoteStore) -> None:
    first = await store.save(draft(body="host pg-stage-2"), actor="alice")
    assert first.created and first.change_id is not None
    second = await store.save(draft(summary="staging DB is pg-stage-3"), actor="alice")
    assert not second.created and second.note.summary == "staging DB is pg-stage-3"
    assert second.note.created_at == first.note.created_at
    again = await store.save(draft(summary="staging DB is pg-stage-3"), actor="alice")
    assert again.change_id is None
    assert [c.action for c in await store.fetch_history()] == ["update", "create"]


async def test_revert_restores_exactly_and_forget_is_revertible(store: NoteStore) -> None:
    await store.save(draft(body="v1 body", category=Category.DECISION, pinned=True), actor="a")
    original = await store.fetch(CHANNEL, "staging-db")
    update = await store.save(draft(summary="changed", body="v2"), actor="a")
    assert update.change_id is not None
    await store.revert(update.change_id, actor="a")
    restored = await store.fetch(CHANNEL, "staging-db")
    assert restored is not None and original is not None
    assert (restored.summary, restored.body, restored.category, restored.pinned) == (
        "staging DB is pg-stage-2",
        "v1 body",
        Category.DECISION,
        True,
    )
    assert restored.created_at == original.created_at

    forgotten = await store.forget(CHANNEL, "staging-db", actor="a")
    assert await store.fetch(CHANNEL, "staging-db") is None
    await store.revert(forgotten.id, actor="a")
    back = await store.fetch(CHANNEL, "staging-db")
    assert back is not None and back.body == "v1 body"


async def test_revert_refuses_when_the_note_changed_since(store: NoteStore) -> None:
    first = await store.save(draft(), actor="a")
    await store.save(draft(summary="newer"), actor="b")
    assert first.change_id is not None
    with pytest.raises(Conflict, match="changed after change"):
        await store.revert(first.change_id, actor="a")
    assert (await store.fetch(CHANNEL, "staging-db")).summary == "newer"  # type: ignore[union-attr]


async def test_revert_twice_is_refused(store: NoteStore) -> None:
    result = await store.save(draft(), actor="a")
    assert result.change_id is not None
    await store.revert(result.change_id, actor="a")
    with pytest.raises(Conflict, match="already reverted"):
        await store.revert(result.change_id, actor="a")


async def test_undo_reverts_only_the_persons_latest_change(store: NoteStore) -> None:
    await store.save(draft("one", "first"), actor="alice")
    await store.save(draft("two", "second"), actor="alice")
    await store.save(draft("bobs", "bob's note"), actor="bob")
    undone = await store.undo("alice")
    assert undone.topic == "two"
    assert await store.fetch(CHANNEL, "two") is None
    assert await store.fetch(CHANNEL, "bobs") is not None
    assert (await store.undo("alice")).topic == "one"
    with pytest.raises(NotFound, match="nothing of yours to undo"):
        await store.undo("alice")


async def test_unknown_note_and_change_are_clear_errors(store: NoteStore) -> None:
    with pytest.raises(NotFound, match="no note 'nope'"):
        await store.forget(CHANNEL, "nope", actor="a")
    with pytest.raises(NotFound, match="no change 99"):
        await store.revert(99, actor="a")


async def test_oversized_note_is_refused_with_how_to_split_and_nothing_changes(
    store: NoteStore,
) -> None:
    with pytest.raises(InvalidInput, match=r"split it into smaller notes .*runbook-part-1"):
        await store.save(draft("runbook", body="x" * (store.max_note_bytes + 1)), actor="a")
    assert await store.list_notes() == []
    assert await store.fetch_history() == []


@pytest.mark.parametrize(
    ("topic", "summary"),
    [("Bad Topic", "ok"), ("-lead", "ok"), ("a--b", "ok"), ("x" * 65, "ok"), ("ok", "  ")],
)
async def test_invalid_topic_or_empty_summary_is_refused(
    store: NoteStore, topic: str, summary: str
) -> None:
    with pytest.raises(InvalidInput):
        await store.save(draft(topic, summary), actor="a")
    assert await store.list_notes() == []


async def test_index_caps_at_40_lines_newest_first_and_reports_who_left(
    store: NoteStore, clock: FakeClock
) -> None:
    for n in range(40):
        clock.advance(minutes=1)
        await store.save(draft(f"note-{n:02d}", f"summary {n}"), actor="a")
    index = await store.index(CHANNEL)
    assert len(index.lines) == 40 and index.hidden == 0
    assert list(index.lines) == sorted(index.lines)

    clock.advance(minutes=1)
    result = await store.save(draft("note-40", "summary 40"), actor="a")
    assert result.in_index
    assert result.left_index == ("note-00",)
    index = await store.index(CHANNEL)
    assert len(index.lines) == 40 and index.hidden == 1
    assert "- note-00: summary 0" not in index.lines
    # Nothing is dropped: the note outside the index is still found.
    hits = await store.search("summary 0 note-00", visibility_for(Viewer(ALICE, CHANNEL)), k=3)
    assert hits[0].note.topic == "note-00"


async def test_pinned_notes_stay_in_a_full_index(store: NoteStore, clock: FakeClock) -> None:
    await store.save(draft("pinned-rule", "always first", pinned=True), actor="a")
    for n in range(45):
        clock.advance(minutes=1)
        await store.save(draft(f"note-{n:02d}", f"summary {n}"), actor="a")
    assert "- pinned-rule: always first" in (await store.index(CHANNEL)).lines


async def test_index_caps_at_2_kib(store: NoteStore, clock: FakeClock) -> None:
    for n in range(20):
        clock.advance(minutes=1)
        await store.save(draft(f"long-{n:02d}", "y" * 190), actor="a")
    index = await store.index(CHANNEL)
    assert index.size <= 2048
    assert len(index.lines) + index.hidden == 20 and index.hidden > 0


async def test_all_indexes_of_a_turn_fit_in_6_kib(store: NoteStore, clock: FakeClock) -> None:
    team = Scope.parse("team:slack/T1")
    for scope in (CHANNEL, ALICE, team):
        for n in range(15):
            clock.advance(minutes=1)
            await store.save(draft(f"n-{n:02d}", "z" * 190, scope=scope), actor="a")
    indexes = await store.indexes_for(visibility_for(Viewer(ALICE, CHANNEL, team)))
    total = sum(len(line.encode()) + 1 for i in indexes for line in i.lines)
    assert total <= 6144
    assert {i.scope for i in indexes} == {CHANNEL, ALICE, team}
    assert any(i.hidden for i in indexes)


async def test_index_is_byte_identical_until_a_note_changes(store: NoteStore) -> None:
    await store.save(draft("a-topic", "alpha"), actor="a")
    await store.save(draft("b-topic", "beta"), actor="a")
    viewer = visibility_for(Viewer(ALICE, CHANNEL))
    first = [i.render() for i in await store.indexes_for(viewer)]
    await store.search("alpha beta", viewer)  # reads bump access counts only
    assert [i.render() for i in await store.indexes_for(viewer)] == first
    await store.save(draft("a-topic", "alpha two"), actor="a")
    assert [i.render() for i in await store.indexes_for(viewer)] != first


async def test_recall_ranks_snippets_and_bumps_access(store: NoteStore) -> None:
    await store.save(draft("staging-db", "staging database host", body="pg-stage-2"), actor="a")
    await store.save(draft("lunch", "team lunch on fridays", body="pizza"), actor="a")
    viewer = visibility_for(Viewer(ALICE, CHANNEL))
    hits = await store.search("Where is the staging database?", viewer)
    assert [h.note.topic for h in hits] == ["staging-db"]
    assert "**database**" in hits[0].snippet
    note = await store.fetch(CHANNEL, "staging-db")
    assert note is not None and note.access_count == 1 and note.last_access is not None


async def test_expired_notes_are_not_recalled_and_are_purged(
    store: NoteStore, clock: FakeClock
) -> None:
    await store.save(
        draft("lesson", "check disk first", expires_at=clock.now + timedelta(days=30)),
        actor="a",
    )
    viewer = visibility_for(Viewer(ALICE, CHANNEL))
    assert await store.search("disk", viewer)
    clock.advance(days=31)
    assert await store.search("disk", viewer) == []
    assert await store.purge_expired() == 1
    assert (await store.fetch_history())[0].reason == "expired"


async def test_database_from_a_newer_lorebot_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE future (x)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(SchemaTooNew, match="upgrade lorebot"):
        await SqliteDatabase.open(path)
    assert path.read_bytes() == before
    assert not (tmp_path / "new.db-wal").exists()


async def test_reopening_keeps_notes_and_schema(db_path: Path, clock: FakeClock) -> None:
    db = await SqliteDatabase.open(db_path)
    await SqliteNoteStore(db, clock=clock).save(draft(), actor="a")
    await db.close()
    await db.close()  # closing twice is harmless
    db = await SqliteDatabase.open(db_path)
    try:
        assert await db.scalar("PRAGMA user_version") == SCHEMA_VERSION
        assert await db.scalar("PRAGMA journal_mode") == "wal"
        assert await db.scalar("PRAGMA foreign_keys") == 1
        assert await SqliteNoteStore(db).fetch(CHANNEL, "staging-db") is not None
    finally:
        await db.close()


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not sqlite" * 100)
    with pytest.raises(Exception, match="not a lorebot database"):
        await SqliteDatabase.open(path)


async def test_cached_indexes_follow_writes_from_another_connection(
    store: NoteStore, open_again: OpenAgain
) -> None:
    first, second = store, (await open_again()).notes  # e.g. `lorebot notes add`, a replica
    await first.save(draft("a-topic", "alpha"), actor="a")
    assert (await first.index(CHANNEL)).lines == ("- a-topic: alpha",)
    await second.save(draft("b-topic", "beta"), actor="cli")
    assert (await first.index(CHANNEL)).lines == ("- a-topic: alpha", "- b-topic: beta")
    await first.forget(CHANNEL, "a-topic", actor="a")
    assert (await first.index(CHANNEL)).lines == ("- b-topic: beta",)


async def test_access_counts_are_written_with_the_next_transaction(
    sqlite_store: SqliteNoteStore, db_path: Path
) -> None:
    store = sqlite_store
    await store.save(draft(), actor="a")
    viewer = visibility_for(Viewer(ALICE, CHANNEL))
    await store.search("staging", viewer)
    await store.search("staging", viewer)
    # Another connection sees them once anything is written (here: closing flushes).
    await store.db.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT access_count FROM notes").fetchone()[0] == 2
