"""Opening lorebot's memory the same way for the daemon and the CLI: the database (with the
driver self-test), the vector index when an embedding model is set, the note store and the
conversation log."""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import Settings
from memory import Database, NoteStore
from memory.conversations import ConversationLog
from memory.db import Clock, utc_now
from memory.embedder import Embedder, OllamaEmbedder
from memory.vectors import VectorIndex

EMBED_TIMEOUT_S = 30.0


def embedder_for(settings: Settings) -> Embedder | None:
    """The Ollama embedder of `ollama.embed_model`, or None when none is set."""
    ollama = settings.ollama
    if not ollama.embed_model:
        return None
    # Queries wait on embeddings, so they get less time than a chat answer.
    timeout_s = min(ollama.timeout_s, EMBED_TIMEOUT_S)
    return OllamaEmbedder(ollama.host, ollama.embed_model, timeout_s=timeout_s)


@dataclass
class Memory:
    db: Database
    notes: NoteStore
    log: ConversationLog
    vectors: VectorIndex

    async def close(self) -> None:
        await self.db.close()
        if isinstance(self.vectors.embedder, OllamaEmbedder):
            await self.vectors.embedder.aclose()


async def open_memory(
    settings: Settings,
    *,
    clock: Clock = utc_now,
    embedder: Embedder | None = None,
    prepare: bool = True,
) -> Memory:
    """Open and migrate the database and check the embedding model against the stored
    vectors (`EmbeddingMismatch` stops here, nothing changed). `embedder` defaults to the
    configured one; `prepare=False` skips the model check (for `notes reembed`)."""
    embedder = embedder or embedder_for(settings)
    db = await Database.open(
        settings.database.path,
        busy_timeout_ms=settings.database.busy_timeout_ms,
        want_vectors=embedder is not None,
    )
    try:
        vectors = VectorIndex(db, embedder)
        notes = NoteStore(
            db,
            clock=clock,
            max_note_bytes=settings.memory.max_note_bytes,
            index_max_lines=settings.memory.index_max_lines,
            index_max_bytes=settings.memory.index_max_bytes,
            vectors=vectors,
        )
        log = ConversationLog(db, clock=clock, secrets=settings.secrets())
        await log.index_older_messages()
        if prepare:
            await vectors.prepare()
    except BaseException:
        await db.close()
        raise
    return Memory(db, notes, log, vectors)
