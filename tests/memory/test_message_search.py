"""Searching past messages: neighbours as context, authors, links, older messages, and
isolation between channels and DMs (by words and by vectors)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.model.ollama import OllamaEmbedder
from memory import Scope, Viewer, explicit, visibility_for
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.driver import sqlite_module
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.migrations import MIGRATIONS
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.conversations import ConversationLog, LogEntry, MessageHit
from memory.stores.vectors import MESSAGE
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock

C1 = Scope.parse("channel:slack/C1")
C2 = Scope.parse("channel:slack/C2")
ALICE = Scope.parse("user:slack/UALICE")
BOB = Scope.parse("user:slack/UBOB")
T1 = Scope.parse("team:slack/T1")

THREAD = "slack/C1/1700000000.000100"
QUESTION = "which port does the gateway listen on?"
REPLY = "yep, 8443"
LINK_Q = "https://example.slack.com/archives/C1/p1700000000000100"
LINK_R = "https://example.slack.com/archives/C1/p1700000000000200"

IN_C1 = visibility_for(Viewer(ALICE, C1, T1))


def priya(text: str) -> LogEntry:
    return LogEntry("user", text, "user:slack/UPRIYA", "Priya")


def marco(text: str) -> LogEntry:
    return LogEntry("user", text, "user:slack/UMARCO", "Marco")


def contents(hits: list[MessageHit]) -> list[str]:
    return [hit.content for hit in hits]


@pytest_asyncio.fixture
async def log(engine_stores: Any) -> ConversationLog:
    """The conversation log on each engine."""
    conversations: ConversationLog = engine_stores.log
    return conversations


@pytest_asyncio.fixture
async def sqlite_log(db_path: Path, clock: FakeClock) -> AsyncIterator[SqlConversationLog]:
    db = await SqliteDatabase.open(db_path)
    try:
        yield SqlConversationLog(db, SqliteMessageSearch(db), clock=clock)
    finally:
        await db.close()


async def test_a_short_reply_is_found_by_the_question_it_answers(
    log: ConversationLog,
) -> None:
    await log.append(THREAD, [priya(QUESTION), marco(REPLY)], scope=str(C1), link=LINK_Q)
    await log.append("slack/C1/other", [priya("lunch is at noon")], scope=str(C1))

    hits = await log.search("gateway port", IN_C1)

    assert set(contents(hits)) == {QUESTION, REPLY}
    assert contents(hits)[0] == QUESTION  # its own words weigh more than its neighbour's
    [reply] = [h for h in hits if h.content == REPLY]
    assert (reply.author_name, reply.scope, reply.link) == ("Marco", str(C1), LINK_Q)
    assert reply.conversation == THREAD and reply.role == "user"


async def test_a_reply_logged_later_is_found_by_the_question_before_it(
    log: ConversationLog, clock: FakeClock
) -> None:
    await log.append(THREAD, [priya(QUESTION)], scope=str(C1), link=LINK_Q)
    assert await log.search("8443", IN_C1) == []
    clock.advance(minutes=3)
    await log.append(THREAD, [marco(REPLY)], scope=str(C1), link=LINK_R)

    by_question = await log.search("gateway port", IN_C1)
    by_number = await log.search("8443", IN_C1)

    links = {h.content: h.link for h in by_question}
    assert links == {QUESTION: LINK_Q, REPLY: LINK_R}
    # The question is now indexed with the reply it got, below the reply itself.
    assert contents(by_number) == [REPLY, QUESTION]
    assert by_number[0].created_at == "2026-11-02T09:03:00.000000Z"


async def test_context_reaches_only_the_message_after(log: ConversationLog) -> None:
    await log.append(
        THREAD,
        [priya(QUESTION), marco(REPLY), priya("thanks"), marco("deploys freeze on friday")],
        scope=str(C1),
    )

    hits = await log.search("gateway port", IN_C1)

    assert set(contents(hits)) == {QUESTION, REPLY}


async def test_what_did_marco_say_finds_his_message_by_author(log: ConversationLog) -> None:
    await log.append(
        THREAD,
        [priya("the release is blocked on the migration"), priya("anyone know the new timeline?")],
        scope=str(C1),
    )
    await log.append("slack/C1/t2", [marco("ship it on thursday")], scope=str(C1), link=LINK_R)

    hits = await log.search("what did Marco say", IN_C1)

    assert hits and hits[0].content == "ship it on thursday"
    assert (hits[0].author_name, hits[0].link) == ("Marco", LINK_R)
    assert "Priya" not in {h.author_name for h in hits}


NASTY = [
    "",
    "   ",
    '"',
    '"gateway port',
    "gateway AND",
    "AND OR NOT",
    "NEAR(gateway port, 2)",
    "gate*",
    "-gateway",
    "(((gateway",
    ")",
    "content:gateway",
    "{content author}: port",
    "^gateway",
    "gateway + port",
    "'; DROP TABLE messages; --",
    "\x00",
    "🚀 8443 🚀",
]


@pytest.mark.parametrize("query", NASTY)
async def test_any_text_is_a_valid_message_query(log: ConversationLog, query: str) -> None:
    await log.append(THREAD, [priya(QUESTION), marco(REPLY)], scope=str(C1))

    hits = await log.search(query, IN_C1)

    if any(word in query for word in ("gateway", "port", "8443")):
        assert hits, f"{query!r} found nothing"
    assert set(contents(hits)) <= {QUESTION, REPLY}


async def test_messages_logged_without_a_scope_are_history_only(log: ConversationLog) -> None:
    await log.append(THREAD, [priya(QUESTION), marco(REPLY)])

    assert await log.search("gateway port", IN_C1) == []
    assert await log.search("gateway port", explicit((C1, ALICE, T1))) == []
    assert len((await log.fetch_history(THREAD)).entries) == 2


async def test_a_channel_never_reads_another_channel_or_any_dm(log: ConversationLog) -> None:
    said = "the gateway port is 8443"
    await log.append("slack/C1/t", [priya(f"C1: {said}")], scope=str(C1))
    await log.append("slack/C2/t", [priya(f"C2: {said}")], scope=str(C2))
    await log.append(
        "dm:slack/DA/", [LogEntry("user", f"alice dm: {said}", str(ALICE))], scope=str(ALICE)
    )
    await log.append(
        "dm:slack/DB/", [LogEntry("user", f"bob dm: {said}", str(BOB))], scope=str(BOB)
    )

    def seen(hits: list[MessageHit]) -> set[str]:
        return {h.content.split(":")[0] for h in hits}

    assert seen(await log.search("gateway", IN_C1, k=10)) == {"C1"}
    assert seen(await log.search("gateway", visibility_for(Viewer(BOB, C2)), k=10)) == {"C2"}
    assert seen(await log.search("gateway", visibility_for(Viewer(ALICE, None, T1)), k=10)) == {
        "alice dm"
    }
    assert seen(await log.search("gateway", visibility_for(Viewer(BOB)), k=10)) == {"bob dm"}


# --- messages logged before message search existed ---------------------------------------


def make_v5_database(path: Path) -> None:
    """A database as lorebot left it before message search (schema 5), with history."""
    conn = sqlite_module().connect(str(path))
    try:
        conn.executescript("".join(MIGRATIONS[:5]) + "\nPRAGMA user_version = 5;")
        conn.executemany(
            "INSERT INTO messages (conversation, role, author, content, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                ("slack/C1/1700000000.000100", "user", "user:slack/UPRIYA", QUESTION, "t1"),
                ("slack/C1/1700000000.000100", "user", "user:slack/UMARCO", REPLY, "t2"),
                ("slack/C1/1700000000.000100", "assistant", "", "noted: gateway on 8443", "t3"),
                ("dm:slack/DA/", "user", str(ALICE), "my gateway token expires in june", "t4"),
                ("dm:slack/DA/", "assistant", "", "I will remind you", "t5"),
            ],
        )
        conn.commit()
    finally:
        conn.close()


async def test_older_messages_are_indexed_once_after_the_upgrade(
    db_path: Path, clock: FakeClock
) -> None:
    make_v5_database(db_path)
    db = await SqliteDatabase.open(db_path)
    try:
        log = SqlConversationLog(db, SqliteMessageSearch(db), clock=clock)
        assert await log.search("gateway", IN_C1) == []  # migrated, not indexed yet

        assert await log.index_older_messages() == 2  # conversations

        hits = await log.search("gateway port", IN_C1, k=10)
        assert set(contents(hits)) == {QUESTION, REPLY, "noted: gateway on 8443"}
        dm = await log.search("gateway", visibility_for(Viewer(ALICE)), k=10)
        assert contents(dm) == ["my gateway token expires in june", "I will remind you"]
        assert "my gateway token expires in june" not in contents(
            await log.search("gateway token", IN_C1, k=10)
        )
        assert await log.index_older_messages() == 0  # nothing left to do
        rows = await db.scalar("SELECT count(*) FROM messages_fts")
        await log.append(
            "slack/C1/1700000000.000100", [priya("and the admin port?")], scope=str(C1)
        )
        assert await log.index_older_messages() == 0
        assert await db.scalar("SELECT count(*) FROM messages_fts") == rows + 1
    finally:
        await db.close()


async def test_messages_without_index_rows_are_indexed(sqlite_log: SqlConversationLog) -> None:
    log = sqlite_log
    await log.append("slack/C1/t0", [priya("first thread")], scope=str(C1))
    # Rows written without the index, as by a lorebot older than message search.
    async with log.db.write() as conn:
        await conn.executemany(
            "INSERT INTO messages (conversation, role, author, author_name, content, scope, "
            "link, created_at) VALUES (?, 'user', ?, ?, ?, ?, ?, 't')",
            [
                (THREAD, "user:slack/UPRIYA", "Priya", QUESTION, str(C1), LINK_Q),
                (THREAD, "user:slack/UMARCO", "Marco", REPLY, str(C1), LINK_R),
            ],
        )
    assert await log.search("gateway", IN_C1) == []

    assert await log.index_older_messages() == 1

    hits = await log.search("gateway port", IN_C1)
    assert {(h.content, h.link) for h in hits} == {(QUESTION, LINK_Q), (REPLY, LINK_R)}
    assert contents(await log.search("first thread", IN_C1)) == ["first thread"]


# --- vectors ------------------------------------------------------------------------------

NEAR = "zulu-near-marker"


async def test_message_vectors_never_cross_channels_or_dms(
    fake_ollama: FakeOllama, db_path: Path, clock: FakeClock
) -> None:
    fake_ollama.models = ["embed-test"]
    query = "where is the rollback runbook"
    fake_ollama.vectors[query] = [1.0] + [0.0] * 7
    fake_ollama.vectors_containing[NEAR] = [1.0] + [0.0] * 7
    db = await SqliteDatabase.open(db_path, want_vectors=True)
    embedder = OllamaEmbedder(fake_ollama.url, "embed-test", timeout_s=5.0)
    try:
        vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
        await vectors.prepare()
        log = SqlConversationLog(db, SqliteMessageSearch(db), clock=clock)
        places = {
            "C1": ("slack/C1/t", C1, ALICE),
            "C2": ("slack/C2/t", C2, ALICE),
            "alice-dm": ("dm:slack/DA/", ALICE, ALICE),
            "bob-dm": ("dm:slack/DB/", BOB, BOB),
        }
        for name, (conversation, scope, person) in places.items():
            # The first matches the query by words too; the second only by its vector.
            await log.append(
                conversation,
                [
                    LogEntry("user", f"{name}: rollback runbook {NEAR}", str(person), name),
                    LogEntry("assistant", f"{name}: quarterly planning {NEAR}"),
                ],
                scope=str(scope),
            )
        await vectors.backfill()
        assert await vectors.pending() == 0

        cases = [
            (IN_C1, "C1"),
            (visibility_for(Viewer(BOB, C2, T1)), "C2"),
            (visibility_for(Viewer(ALICE, None, T1)), "alice-dm"),
            (visibility_for(Viewer(BOB)), "bob-dm"),
        ]
        for visibility, place in cases:
            hits = await log.search(query, visibility, k=10, vectors=vectors)
            assert sorted(contents(hits)) == [
                f"{place}: quarterly planning {NEAR}",  # found by its vector alone
                f"{place}: rollback runbook {NEAR}",
            ], place
            nearest = await vectors.nearest(MESSAGE, [1.0] + [0.0] * 7, visibility, 10)
            assert len(nearest) == 2, place
            assert {i for i, _ in nearest} == {h.id for h in hits}
    finally:
        await db.close()
        await embedder.aclose()
