"""Any user text is a valid recall query: FTS5 syntax is never passed through."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import NoteDraft, Scope, Viewer, visibility_for
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore

CHANNEL = Scope.parse("channel:discord/1100223344")
VIEW = visibility_for(Viewer(Scope.parse("user:discord/42"), CHANNEL))

NASTY = [
    "",
    "   ",
    '"',
    '"unbalanced',
    "AND",
    "OR NOT",
    "NEAR(staging db, 2)",
    "stag*",
    "-staging",
    "(((",
    ")",
    "topic:staging",
    "{topic body}: x",
    "^staging",
    "🚀 deploy 🚀",
    "staging AND (db OR",
    "'; DROP TABLE notes; --",
    "\x00\x01",
]


async def _fresh_store() -> tuple[SqliteDatabase, SqliteNoteStore]:
    db = await SqliteDatabase.open(":memory:")
    store = SqliteNoteStore(db)
    await store.save(
        NoteDraft(CHANNEL, "staging-db", "staging DB is pg-stage-2", "deploy 🚀 via pipeline"),
        actor="a",
    )
    return db, store


@pytest.mark.parametrize("query", NASTY)
async def test_fts_syntax_in_queries_never_raises(query: str) -> None:
    db, store = await _fresh_store()
    try:
        hits = await store.search(query, VIEW)
        if "staging" in query.lower() or "deploy" in query.lower():
            assert [h.note.topic for h in hits] == ["staging-db"]
    finally:
        await db.close()


@settings(max_examples=200, deadline=None)
@given(query=st.text())
def test_arbitrary_unicode_queries_never_raise(query: str) -> None:
    async def run() -> None:
        db, store = await _fresh_store()
        try:
            await store.search(query, VIEW)
        finally:
            await db.close()

    asyncio.run(run())
