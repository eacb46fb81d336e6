"""Opening lorebot's memory the same way for the daemon and the CLI: the database (with the
driver self-test), the vector index when an embedding model is set, the note store and the
conversation log."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config.paths import old_database_hint
from bot.errors import UserError
from memory import Database, NoteStore
from memory.clock import Clock, utc_now
from memory.conversations import ConversationLog
from memory.embedder import Embedder
from memory.vectors import VectorIndex

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.config.snapshot import SettingsSnapshot

    # What opening the memory reads: the settings, or a read-only command's snapshot.
    StoreSettings = Settings | SettingsSnapshot

EMBED_TIMEOUT_S = 30.0

# Whether `open_memory` may start a new database; the command line clears it for the
# commands that act on the database as it is.
_may_create: ContextVar[bool] = ContextVar("may_create_database", default=True)


def embedder_for(settings: StoreSettings) -> Embedder | None:
    """The Ollama embedder of `ollama.embed_model`, or None when none is set."""
    ollama = settings.ollama
    if not ollama.embed_model:
        return None
    # Queries wait on embeddings, so they get less time than a chat answer.
    timeout_s = min(ollama.timeout_s, EMBED_TIMEOUT_S)
    from bot.model.ollama import OllamaEmbedder  # the model client, only when configured

    return OllamaEmbedder(
        ollama.host,
        ollama.embed_model,
        timeout_s=timeout_s,
        probe_timeout_s=min(ollama.probe_timeout_s, timeout_s),
    )


def quick_embedder_for(settings: StoreSettings) -> Embedder | None:
    """The embedder of a one-shot command (`bot.model.quick_embed`): it asks for one query's
    vector without loading the ollama client. None when no model is set."""
    ollama = settings.ollama
    if not ollama.embed_model:
        return None
    from bot.model.quick_embed import QuickEmbedder

    # A one-shot command has not seen the model answer yet: the probe's timeout, as the
    # daemon's embedder gives its first calls.
    timeout_s = min(ollama.timeout_s, EMBED_TIMEOUT_S, ollama.probe_timeout_s)
    return QuickEmbedder(ollama.host, ollama.embed_model, timeout_s=timeout_s)


def check_database(settings: StoreSettings, *, create: bool) -> None:
    """Stop with one line when the database is not where a command needs it: an older
    lorebot's `./lorebot.db` waits to be moved, or (unless `create`) none exists yet."""
    path = settings.database.path
    hint = old_database_hint(path)
    if hint is not None:
        raise UserError(hint)
    if create or path.exists():
        return
    from bot.config.loading import read_inputs  # only to say where the path came from

    source = read_inputs(settings.config).source_of(("database", "path"))
    origin = "the default" if source.origin == "default" else f"set by {source}"
    raise UserError(
        f"there is no lorebot database at {path} ({origin}): to use another one, set "
        "LOREBOT_DATABASE__PATH or database.path in the config file"
    )


@contextmanager
def existing_database_only(only: bool = True) -> Iterator[None]:
    """Within it (when `only`), opening the memory without a database says where lorebot
    looked instead of starting an empty one."""
    token = _may_create.set(not only)
    try:
        yield
    finally:
        _may_create.reset(token)


@dataclass
class Memory:
    db: Database
    notes: NoteStore
    log: ConversationLog
    vectors: VectorIndex

    async def close(self) -> None:
        await self.db.close()
        # The daemon's embedder keeps connections open; a one-shot command's has none.
        aclose = getattr(self.vectors.embedder, "aclose", None)
        if aclose is not None:
            await aclose()


async def open_memory(
    settings: StoreSettings,
    *,
    clock: Clock = utc_now,
    embedder: Embedder | None = None,
    prepare: bool = True,
    probe: bool = True,
    create: bool | None = None,
) -> Memory:
    """Open and migrate the database and check the embedding model against the stored
    vectors (`EmbeddingMismatch` stops here, nothing changed). `embedder` defaults to the
    configured one; `prepare=False` skips the model check (for `notes reembed`);
    `probe=False` checks the model's name but leaves its dimension to the first vector
    it makes (a one-shot search, which embeds its query anyway); `create=False` (by
    default: within `existing_database_only`) refuses to start a new database, in a
    `UserError` that says where lorebot looked."""
    create = _may_create.get() if create is None else create
    check_database(settings, create=create)
    embedder = embedder or embedder_for(settings)
    db = await Database.open(
        settings.database.path,
        busy_timeout_ms=settings.database.busy_timeout_ms,
        want_vectors=embedder is not None,
        create=create,
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
            secrets=settings.secrets(),
        )
        log = ConversationLog(db, clock=clock, secrets=settings.secrets())
        await log.index_older_messages()
        if prepare:
            await vectors.prepare(probe=probe)
    except BaseException:
        await db.close()
        raise
    return Memory(db, notes, log, vectors)
