"""PostgreSQL-only: how bm25 learns how many notes hold a word. FTS5 keeps that in its
index; on PostgreSQL the counts of common words come from the statistics ANALYZE keeps
(an import ends with one), rarer words are counted through the index. The notes still
score as on SQLite, right after an import and after writes of this process: the same
notes, each within 2% (a sample's share of a common word moves its idf by about a
percent, so notes scored almost alike may swap places)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memory import NoteDraft, Scope, Viewer, visibility_for
from memory.stores.stores import StoreOptions
from tests.support.engines import open_engine
from tests.support.postgres import PostgresServer

CHANNEL = Scope.parse("channel:slack/C1")
VIEW = visibility_for(Viewer(Scope.parse("user:slack/U1"), CHANNEL, None))
FILLER = [f"filler{n}" for n in range(40)]


def drafts() -> list[NoteDraft]:
    """4,000 notes: "deploy" in 40% of them (so many that its count comes from the
    statistics, yet bm25 still weighs it), "gateway" in a few, notes of different lengths,
    so the common word's weight decides an order."""
    rng = random.Random(5)
    found = []
    for n in range(4000):
        words = rng.choices(FILLER, k=rng.randint(3, 25))
        if n % 5 < 2:
            words += ["deploy"] * rng.randint(1, 3)
        if n % 500 == 0:
            words.append("gateway")
        rng.shuffle(words)
        found.append(NoteDraft(CHANNEL, f"note-{n}", f"note {n}", body=" ".join(words)))
    return found


Scored = dict[str, float]


def alike(postgres: Scored, sqlite: Scored) -> bool:
    return postgres.keys() == sqlite.keys() and all(
        abs(postgres[topic] - sqlite[topic]) <= 0.02 * abs(sqlite[topic]) for topic in sqlite
    )


async def ranked(engine: str, where: str | Path, queries: list[str]) -> list[Scored]:
    stores = await open_engine(engine, where, StoreOptions())
    try:
        await stores.notes.import_drafts(drafts(), actor="t")
        result = []
        for query in queries:
            hits = await stores.notes.search(query, VIEW, k=10, bump=False)
            result.append({hit.note.topic: hit.score for hit in hits})
        return result
    finally:
        await stores.close()


QUERIES = ["deploy gateway", "deploy", "deploy filler3 filler7", "gateway filler1"]


async def test_an_import_leaves_statistics_and_the_notes_rank_as_on_sqlite(
    pg_url: str, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    on_postgres = await ranked("postgresql", pg_url, QUERIES)
    database = pg_url.rsplit("/", 1)[1]
    common = postgres_server.sql(
        "SELECT 'deploy' = ANY(most_common_elems::text::text[]) FROM pg_stats "
        "WHERE tablename = 'notes' AND attname = 'words'",
        database,
    )
    assert common == "t"  # counted from the statistics, not through the index
    on_sqlite = await ranked("sqlite", tmp_path / "lorebot.db", QUERIES)
    assert all(alike(pg, lite) for pg, lite in zip(on_postgres, on_sqlite, strict=True))
    assert all(len(scored) == 10 for scored in on_postgres)


async def test_notes_saved_after_the_statistics_rank_as_on_sqlite(
    pg_url: str, tmp_path: Path
) -> None:
    later = [NoteDraft(CHANNEL, f"later-{n}", "deploy gateway " * (n + 1)) for n in range(5)]
    scores: list[Scored] = []
    for engine, where in (("postgresql", pg_url), ("sqlite", tmp_path / "lorebot.db")):
        stores = await open_engine(engine, where, StoreOptions())
        try:
            await stores.notes.import_drafts(drafts(), actor="t")
            await stores.notes.search("deploy gateway", VIEW, k=10, bump=False)  # counted
            for draft in later:
                await stores.notes.save(draft, actor="t")
            hits = await stores.notes.search("deploy gateway", VIEW, k=10, bump=False)
            scores.append({hit.note.topic: hit.score for hit in hits})
        finally:
            await stores.close()
    assert alike(*scores)
    assert {f"later-{n}" for n in range(5)} <= scores[0].keys()


async def test_a_search_while_another_turn_records_messages_still_counts_its_words(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn's message search counts its rarer words, and another turn records its
    messages (which drops the kept counts) just as the search's connection goes back to
    the pool: the search still has every count it asked for (it failed with a KeyError
    under 10 concurrent conversations)."""
    stores = await open_engine("postgresql", postgres_server.new_database(), StoreOptions())
    try:
        stats = stores.log.index.word_stats  # type: ignore[attr-defined]
        pooled = stats.db.connection

        @contextlib.asynccontextmanager
        async def returned_as_another_turn_records() -> AsyncIterator[Any]:
            async with pooled() as conn:
                yield conn
            stats.added(2)  # that turn's question and answer

        monkeypatch.setattr(stats.db, "connection", returned_as_another_turn_records)
        found = await stats.params("where does the gateway run")
        assert found is not None and len(found["idf"]) == len(found["lexemes"]) > 0
    finally:
        await stores.close()
