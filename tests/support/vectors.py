"""A store with notes and messages of which only some have their vector yet, as the
embedding model left it, for the tests of search with vectors."""

from __future__ import annotations

from pathlib import Path

from bot.model.ollama import OllamaEmbedder
from memory import NoteDraft, Scope
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.conversations import LogEntry
from tests.fakes.ollama import FakeOllama

MODEL = "embed-test"
C1 = Scope.parse("channel:slack/C1")
NOTES = 5


async def fill(path: Path, fake: FakeOllama, *, embed: int) -> None:
    """NOTES notes and three messages in C1 (saved again when called again), then up to
    `embed` queued items get their vector."""
    db = await SqliteDatabase.open(path, want_vectors=True)
    embedder = OllamaEmbedder(fake.url, MODEL, timeout_s=10.0)
    try:
        vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
        await vectors.prepare()
        store = SqliteNoteStore(db, vectors=vectors)
        for n in range(NOTES):
            await store.save(NoteDraft(C1, f"gateway-{n}", f"gateway fact {n}"), actor="test")
        await SqlConversationLog(db, SqliteMessageSearch(db)).append(
            "slack/C1/t",
            [
                LogEntry("user", f"the gateway moved, part {n}", "user:slack/UP", "Priya")
                for n in range(3)
            ],
            scope=str(C1),
        )
        await vectors.backfill(batch_size=1, limit=embed)
    finally:
        await db.close()
        await embedder.aclose()
