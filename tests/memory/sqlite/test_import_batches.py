"""Bulk imports write many rows per statement: what they store must be what smaller
batches, and single saves, store."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.sql.conversations import SqlConversationLog
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.stores.conversations import PastMessage
from memory.transfer.note_import import import_notes, read_source
from tests.support.clock import FakeClock

# More rows than one INSERT of 8 values a row can bind under SQLite's usual limit (32766).
BIG_BATCH = 4500


def past(n: int) -> PastMessage:
    thread = n % 7
    return PastMessage(
        source_id=f"slack/C1/{n}",
        conversation=f"slack/C1/{thread}" if thread else "slack/C1/",
        scope="channel:slack/C1" if n % 5 else f"user:slack/U{n % 3}",
        author=f"user:slack/U{n % 4}",
        author_name=f"person {n % 4}",
        content=f"message {n} about canary {n % 13} and the pager {n % 11}",
        created_at=datetime(2026, 9, 1, tzinfo=UTC) + timedelta(seconds=n),
    )


async def stored(path: Path, batch: int) -> list[list[Any]]:
    """Every message and message-index row after importing the same messages in
    batches of `batch`, twice (the second adds nothing)."""
    messages = [past(n) for n in range(BIG_BATCH + 100)]
    db = await SqliteDatabase.open(path)
    try:
        log = SqlConversationLog(db, SqliteMessageSearch(db, import_batch=batch))
        assert await log.import_messages(messages) == len(messages)
        assert await log.import_messages(messages) == 0
        found = []
        for table in ("messages", "messages_fts"):
            async with db.conn.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid") as cur:
                found.append([tuple(row) for row in await cur.fetchall()])
        return found
    finally:
        await db.close()


async def test_a_batch_larger_than_one_statement_stores_what_small_batches_do(
    tmp_path: Path,
) -> None:
    """A batch over SQLite's limit of variables is split into several statements; the
    rows, their neighbours in the index and their scopes are those of small batches."""
    big = await stored(tmp_path / "big.db", BIG_BATCH)
    small = await stored(tmp_path / "small.db", 7)
    assert big[0] == small[0]
    assert big[1] == small[1]
    assert len(big[1]) == BIG_BATCH + 100


TRICKY = [
    'quotes " and \\ backslashes \\" mixed',
    "tabs\tnew\nlines\r and \x01\x1f controls and \x7f",
    "accents «ünïcödé», emoji 🚀✅ and a line separator \u2028 here",
    "a replacement character \ufffd and a slash / here",
]


async def test_an_imports_states_before_are_the_text_a_single_save_writes(
    tmp_path: Path, clock: FakeClock
) -> None:
    """An import writes the state before of each note it updates itself; its text must be
    byte for byte what `notes add` writes for the same note, so history, revert and
    backups read both alike."""
    lines = [
        {
            "scope": "channel:slack/C1",
            "topic": f"tricky-{n}",
            "summary": f"tricky {n}",
            "body": text,
            "category": "fact",
            "pinned": n % 2 == 0,
            "private": n == 3,
            "author": "user:slack/U1",
            "source": 'https://example.slack.com/x/"y"',
        }
        for n, text in enumerate(TRICKY)
    ]
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    second.write_text(
        "".join(json.dumps({**line, "summary": "changed"}) + "\n" for line in lines),
        encoding="utf-8",
    )
    written = []
    for name in ("imported", "saved"):
        db = await SqliteDatabase.open(tmp_path / f"{name}.db")
        try:
            store = SqliteNoteStore(db, clock=clock)
            for item in read_source(first):
                await store.save(item.draft, actor="cli")
            if name == "imported":
                await import_notes(store, second, actor="cli")
                sql = "SELECT before_json FROM note_change_items"
            else:
                for item in read_source(second):
                    await store.save(item.draft, actor="cli")
                sql = "SELECT before_json FROM note_changes WHERE action = 'update'"
            async with db.conn.execute(sql) as cur:
                written.append(sorted(row[0] for row in await cur.fetchall()))
        finally:
            await db.close()
    assert written[0] == written[1]
    assert len(written[0]) == len(TRICKY)
