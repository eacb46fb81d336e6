"""The stores of a database with vectors, on either engine, for the tests of the vector
index: sqlite-vec in a temporary file, or pgvector on the session's pgserver
(`tests.support.pgvector`), with real Ollama embedders talking to the fake Ollama.

Notes and messages are saved through the engine's own stores, so the triggers that queue
them for a vector run as in lorebot; each test scripts the vector of what it saves.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.model.ollama import OllamaEmbedder
from memory import NoteDraft, Scope, Viewer
from memory.embeddings import note_text
from memory.sql.vectors import SqlVectorIndex
from memory.stores.notes import NoteStore
from memory.stores.stores import StoreOptions
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock

EMBED = "embed-test"
OTHER = "other-embed"
DIM = 8

C1 = Scope.parse("channel:slack/C1")
C2 = Scope.parse("channel:slack/C2")
ALICE = Scope.parse("user:slack/UALICE")
BOB = Scope.parse("user:slack/UBOB")
T1 = Scope.parse("team:slack/T1")
T2 = Scope.parse("team:slack/T2")

VECTOR_TABLE = re.compile(r"vec_(notes|messages)_\d+")


def unit(axis: int, dim: int = DIM) -> list[float]:
    return [1.0 if i == axis else 0.0 for i in range(dim)]


def at_angle(degrees: float, dim: int = DIM) -> list[float]:
    """A unit vector in the plane of axes 0 and 1, `degrees` away from `unit(0)`."""
    rad = math.radians(degrees)
    return [math.cos(rad), math.sin(rad)] + [0.0] * (dim - 2)


def ids(found: list[tuple[int, float]]) -> list[int]:
    return [item for item, _ in found]


def topics(hits: Any) -> list[str]:
    """The topics of a search's hits, in order."""
    return [hit.note.topic for hit in hits]


def may_read(viewer: Viewer, scope: Scope, private: bool) -> bool:
    """DESIGN's table, restated independently of memory.policy.visibility."""
    if viewer.team is not None and scope == viewer.team:
        return True
    if viewer.channel is None:
        return scope == viewer.speaker
    return scope == viewer.channel or (scope == viewer.speaker and not private)


@dataclass
class VectorStores:
    """The stores of one database on `engine`, its vector index not prepared yet."""

    engine: str
    stores: Any  # SqliteStores or PostgresStores
    fake: FakeOllama
    embedders: list[OllamaEmbedder] = field(default_factory=list)

    @property
    def close_to(self) -> float:
        """How near an exact distance one read from the index is: pgvector keeps floats,
        sqlite-vec int8 components (each rounded to 1/127 of the vector's largest)."""
        return 1e-6 if self.engine == "postgresql" else 1e-2

    @property
    def db(self) -> Any:
        return self.stores.db

    @property
    def vectors(self) -> SqlVectorIndex:
        index: SqlVectorIndex = self.stores.vectors
        return index

    @property
    def notes(self) -> NoteStore:
        notes: NoteStore = self.stores.notes
        return notes

    @property
    def log(self) -> Any:
        return self.stores.log

    def embedder(self, model: str = EMBED) -> OllamaEmbedder:
        """A real Ollama embedder for the fake, closed after the test."""
        embedder = OllamaEmbedder(self.fake.url, model, timeout_s=5.0)
        self.embedders.append(embedder)
        return embedder

    def again(self, model: str | None = EMBED) -> Any:
        """Other stores of this database, as another process would open them, with an
        embedder of `model` (None: no embedding model); their index is not prepared."""
        embedder = None if model is None else self.embedder(model)
        return type(self.stores)(self.db, self.stores.options, embedder)

    def index(self, model: str | None = EMBED) -> SqlVectorIndex:
        """Another vector index of this database, for `model`, not prepared."""
        index: SqlVectorIndex = self.again(model).vectors
        return index

    def words_only(self) -> NoteStore:
        """The note store of this database with no embedding model: words alone."""
        notes: NoteStore = self.again(None).notes
        return notes

    async def note(
        self,
        scope: Scope,
        topic: str,
        summary: str,
        *,
        body: str = "",
        private: bool = False,
        vector: list[float] | None = None,
    ) -> int:
        """Save (or change) a note through the note store, its vector scripted."""
        if vector is not None:
            self.fake.vectors[note_text(topic, summary, body)] = vector
        draft = NoteDraft(scope, topic, summary, body=body, private=private)
        return (await self.notes.save(draft, actor="test")).note.id

    async def forget(self, scope: Scope, topic: str) -> None:
        await self.notes.forget(scope, topic, actor="test")

    async def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of one statement of neutral SQL, as tuples."""
        async with self.db.reading() as session:
            found = await session.rows(sql)
        columns = list(found[0].keys()) if found else []  # (a sqlite3.Row iterates values)
        return [tuple(row[column] for column in columns) for row in found]

    async def vector_tables(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every vector table's rows (on PostgreSQL with the vector as text), by id."""
        if self.engine == "sqlite":
            found = await self.rows("SELECT name FROM sqlite_master ORDER BY name")
            select = "SELECT * FROM {}"
        else:
            found = await self.rows(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            )
            select = "SELECT id, scope, private, embedding::text FROM {} ORDER BY id"
        return {
            name: sorted(await self.rows(select.format(name)), key=repr)
            for (name,) in found
            if VECTOR_TABLE.fullmatch(name)
        }

    async def snapshot(self) -> dict[str, Any]:
        """Everything a model check could change, as plain data."""
        if self.engine == "sqlite":
            schema = await self.rows("SELECT type, name, sql FROM sqlite_master ORDER BY name")
            notes, messages = "SELECT * FROM notes", "SELECT * FROM messages"
        else:
            schema = await self.rows(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            )
            notes = "SELECT id, scope, topic, summary FROM notes"
            messages = "SELECT id, content FROM messages"
        return {
            "schema_version": await self.db.fetch_schema_version(),
            "schema": schema,
            "state": await self.rows("SELECT key, value FROM embedding_state ORDER BY key"),
            "queue": await self.rows(
                "SELECT kind, item_id FROM embed_queue ORDER BY kind, item_id"
            ),
            "notes": await self.rows(f"{notes} ORDER BY id"),
            "messages": await self.rows(f"{messages} ORDER BY id"),
            "vectors": await self.vector_tables(),
        }


@asynccontextmanager
async def opened(
    engine: str, where: str | Path, fake: FakeOllama, clock: FakeClock, *, model: str = EMBED
) -> AsyncIterator[VectorStores]:
    """The stores of the database at `where` (a file on SQLite, a URL on PostgreSQL), with
    an embedder of `model`; closed, with every embedder, on leaving."""
    fake.models = [EMBED, OTHER]
    options = StoreOptions(clock=clock)
    embedder = OllamaEmbedder(fake.url, model, timeout_s=5.0)
    if engine == "sqlite":
        from memory.sqlite.stores import open_stores

        stores: Any = await open_stores(Path(where), options, embedder=embedder)
    else:
        from memory.postgres.stores import open_stores as open_postgres

        stores = await open_postgres(str(where), options, embedder=embedder)
    found = VectorStores(engine, stores, fake)
    try:
        yield found
    finally:
        await stores.close()  # and its embedder
        for other in found.embedders:
            await other.aclose()


@pytest.fixture
def vector_database(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | Path:
    """Where the test's database is: a file, or a new database on the pgvector server
    (import `tests.support.pgvector`'s fixtures into the module too)."""
    if engine == "sqlite":
        return tmp_path / "lorebot.db"
    url: str = request.getfixturevalue("pgvector_url")
    return url


@pytest.fixture
async def vector_stores(
    engine: str, vector_database: str | Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[VectorStores]:
    """The stores of a database on each engine, with vectors set up for EMBED."""
    async with opened(engine, vector_database, fake_ollama, clock) as found:
        await found.vectors.prepare()
        assert found.vectors.enabled
        yield found
