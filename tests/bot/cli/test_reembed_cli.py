"""`lorebot notes reembed` and `notes search` with vectors, run as the real command in a
subprocess against the fake Ollama: a model mismatch stops with one line, a re-embedding
killed midway resumes without redoing what it committed, and history search prints links."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.model.ollama import OllamaEmbedder
from memory import NoteDraft, Scope, Viewer, explicit, visibility_for
from memory.embeddings import EmbeddingState, note_text
from memory.errors import EmbeddingMismatch
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.notes import SqliteNoteStore
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.conversations import LogEntry
from memory.stores.vectors import MESSAGE, NOTE
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.paths import ROOT as ROOT

OLD, NEW = "old-embed", "new-embed"
C1 = Scope.parse("channel:slack/C1")
C2 = Scope.parse("channel:slack/C2")
ALICE = Scope.parse("user:slack/UALICE")
LINK = "https://example.slack.com/archives/C1/p1700000000000200"
NOTES = 30


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def cli_env(fake: FakeOllama, model: str | None) -> dict[str, str]:
    """The environment of the `env` fixture, pointed at the fake Ollama."""
    values = {**os.environ, "LOREBOT_OLLAMA__HOST": fake.url, "PYTHONUNBUFFERED": "1"}
    values.pop("LOREBOT_OLLAMA__EMBED_MODEL", None)
    if model is not None:
        values["LOREBOT_OLLAMA__EMBED_MODEL"] = model
    return values


async def start_cli(environment: dict[str, str], *argv: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        *argv,
        cwd=ROOT,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process, within: float = 120.0) -> Run:
    async with asyncio.timeout(within):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


async def run_cli(environment: dict[str, str], *argv: str) -> Run:
    """Run `lorebot ARGV…` to the end, while this event loop keeps serving the fake."""
    return await finish(await start_cli(environment, *argv))


@asynccontextmanager
async def opened(
    path: Path, fake: FakeOllama, model: str | None
) -> AsyncIterator[tuple[SqliteDatabase, SqlVectorIndex]]:
    """The database with sqlite-vec, and a vector index of `model` (not prepared)."""
    db = await SqliteDatabase.open(path, want_vectors=True)
    embedder = None if model is None else OllamaEmbedder(fake.url, model, timeout_s=10.0)
    try:
        yield db, SqlVectorIndex(db, embedder, SqliteVectorTables(db))
    finally:
        await db.close()
        if embedder is not None:
            await embedder.aclose()


async def fill(path: Path, fake: FakeOllama, clock: FakeClock, *, model: str | None = OLD) -> None:
    """NOTES notes and four conversations (one logged without a scope), embedded by
    `model` when one is given."""
    async with opened(path, fake, model) as (db, vectors):
        if model is not None:
            await vectors.prepare()
        store = SqliteNoteStore(db, clock=clock, vectors=vectors)
        for n in range(NOTES):
            scope = ALICE if n % 5 == 4 else C1
            await store.save(
                NoteDraft(
                    scope, f"note-{n:02d}", f"summary of item n{n:02d}", body=f"body of n{n:02d}"
                ),
                actor="test",
            )
        log = SqlConversationLog(db, SqliteMessageSearch(db), clock=clock)
        await log.append(
            "slack/C1/1700000000.000100",
            [
                LogEntry(
                    "user", "m00 which port does the gateway listen on?", "user:slack/UP", "Priya"
                ),
            ],
            scope=str(C1),
        )
        await log.append(
            "slack/C1/1700000000.000100",
            [
                LogEntry("user", "m01 yep, 8443", "user:slack/UMARCO", "Marco"),
                LogEntry("assistant", "m02 noted"),
            ],
            scope=str(C1),
            link=LINK,
        )
        await log.append(
            "slack/C2/t",
            [
                LogEntry("user", f"m{n:02d} channel two says {n}", "user:slack/UP", "Priya")
                for n in (3, 4, 5)
            ],
            scope=str(C2),
        )
        await log.append(
            "dm:slack/DA/",
            [
                LogEntry("user", "m06 the gateway in my dm", str(ALICE), "Alice"),
                LogEntry("assistant", "m07 ok"),
            ],
            scope=str(ALICE),
        )
        await log.append("slack/C9/t", [LogEntry("user", "m08 history only, no scope")])
        if model is not None:
            await vectors.backfill()
            assert await vectors.pending() == 0


SCOPED_MESSAGES = 8  # m00…m07; m08 is history only


async def rows(db: SqliteDatabase, sql: str) -> list[tuple[Any, ...]]:
    async with db.conn.execute(sql) as cursor:
        return [tuple(r) for r in await cursor.fetchall()]


async def snapshot(path: Path, fake: FakeOllama) -> dict[str, Any]:
    """What a command could change: schema, embedding state, queue, notes, messages, and
    the rows of every vector table."""
    async with opened(path, fake, None) as (db, _):
        tables = await rows(db, "SELECT type, name, sql FROM sqlite_master ORDER BY name")
        vec_tables = [n for _, n, _ in tables if re.fullmatch(r"vec_(notes|messages)_\d+", n)]
        return {
            "user_version": await db.scalar("PRAGMA user_version"),
            "schema": tables,
            "state": dict(await rows(db, "SELECT key, value FROM embedding_state")),
            "queue": await rows(db, "SELECT kind, item_id FROM embed_queue ORDER BY 1, 2"),
            "notes": await rows(db, "SELECT * FROM notes ORDER BY id"),
            "messages": await rows(db, "SELECT * FROM messages ORDER BY id"),
            "vectors": {  # whatever the tables' layout
                n: sorted(await rows(db, f"SELECT * FROM {n}"), key=repr) for n in vec_tables
            },
        }


async def ids_with_vectors(
    path: Path, fake: FakeOllama, state: EmbeddingState
) -> dict[str, set[int]]:
    """The notes and messages that have a vector in the tables of `state`."""
    async with opened(path, fake, None) as (_, index):
        index.state = state
        probe = [1.0] * state.dim
        return {
            kind: {i for i, _ in await index.nearest(kind, probe, explicit(scopes), 100_000)}
            for kind, scopes in ((NOTE, (C1, ALICE)), (MESSAGE, (C1, C2, ALICE)))
        }


# --- notes search -------------------------------------------------------------------------


async def test_history_search_prints_the_matching_message_with_its_link(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    await fill(env / "cli.db", fake_ollama, clock, model=None)
    environment = cli_env(fake_ollama, None)

    found = await run_cli(
        environment,
        "notes",
        "search",
        "gateway port",
        "--history",
        "--as",
        str(ALICE),
        "--in",
        str(C1),
    )

    assert found.code == 0, found.err
    lines = found.out.splitlines()
    reply = lines.index("    m01 yep, 8443")
    assert lines[reply - 1].endswith(f"Marco  ({C1})  {LINK}")
    assert lines[reply - 1].startswith("2026-11-02 09:00  ")
    assert "m06 the gateway in my dm" not in found.out  # Alice's DM is not this channel's
    nothing = await run_cli(environment, "notes", "search", "8443", "--history", "--scope", str(C2))
    assert (nothing.code, nothing.out) == (0, "nothing found\n")
    assert fake_ollama.requests_to("/api/embed") == []  # no embedding model: words alone


async def test_reembed_without_an_embedding_model_says_what_to_set(
    env: Path, fake_ollama: FakeOllama
) -> None:
    result = await run_cli(cli_env(fake_ollama, None), "notes", "reembed")

    assert result.code == 1
    assert result.err == "lorebot: set ollama.embed_model (LOREBOT_OLLAMA__EMBED_MODEL) first\n"
    assert fake_ollama.requests == []


@pytest.mark.parametrize(
    ("model", "dim", "configured"),
    [
        pytest.param(NEW, 8, "but ollama.embed_model is new-embed:latest.", id="other-model"),
        pytest.param(
            OLD, 12, "but old-embed:latest now returns 12 dimensions", id="other-dimension"
        ),
    ],
)
async def test_search_with_another_embedding_model_stops_with_one_line(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock, model: str, dim: int, configured: str
) -> None:
    fake_ollama.models = [OLD, NEW]
    await fill(env / "cli.db", fake_ollama, clock)
    before = await snapshot(env / "cli.db", fake_ollama)
    fake_ollama.embedding_dim = dim

    result = await run_cli(
        cli_env(fake_ollama, model), "notes", "search", "gateway", "--scope", str(C1)
    )

    assert result.code == 1 and result.out == ""
    [line] = result.err.splitlines()
    assert line.startswith("lorebot: the stored vectors were made by old-embed:latest (8 dim")
    assert configured in line
    assert "`lorebot notes reembed`" in line and "Traceback" not in result.err
    assert await snapshot(env / "cli.db", fake_ollama) == before


# --- reembed ------------------------------------------------------------------------------


def numbers(texts: list[str], letter: str) -> list[int]:
    """The item numbers (n07, m03) of embedded texts; a message's text may start with the
    message before it, so its own number is the last one."""
    found = []
    for text in texts:
        marks = re.findall(rf"\b{letter}(\d\d)\b", text)
        if marks:
            found.append(int(marks[-1]))
    return found


def inputs(bodies: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = []
    for body in bodies:
        raw = body["input"]
        texts += [raw] if isinstance(raw, str) else raw
    return [t for t in texts if t != "lorebot dimension probe"]


async def test_reembed_killed_midway_resumes_where_it_stopped(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    path = env / "cli.db"
    fake_ollama.models = [OLD, NEW]
    await fill(path, fake_ollama, clock)
    before = await snapshot(path, fake_ollama)
    assert before["state"] == {"model": "old-embed:latest", "dim": "8", "generation": "1"}
    fake_ollama.embedding_dim = 12  # the new model
    fake_ollama.clear()
    environment = cli_env(fake_ollama, NEW)

    # The probe and five batches of two notes are answered; the sixth batch never is.
    fake_ollama.hold_embeds(after=6)
    first = await start_cli(environment, "notes", "reembed", "--batch", "2")
    try:
        sent = await fake_ollama.wait_for_requests(7, "/api/embed", within=60)
    finally:
        first.kill()  # SIGKILL, while it waits for the sixth batch
        killed = await finish(first)
    fake_ollama.release_embeds()
    assert killed.code == -9, killed.err
    committed, lost = inputs(sent[:6]), inputs(sent[6:])
    assert sorted(numbers(committed, "n")) == list(range(10))
    assert sorted(numbers(lost, "n")) == [10, 11]

    # Until the switch, the old model's vectors are the ones in use.
    halfway = await snapshot(path, fake_ollama)
    assert {k: v for k, v in halfway["state"].items() if not k.startswith("next_")} == {
        "model": "old-embed:latest",
        "dim": "8",
        "generation": "1",
    }
    assert halfway["state"]["next_model"] == "new-embed:latest"
    assert {n: len(v) for n, v in halfway["vectors"].items()} == {
        "vec_notes_1": NOTES,
        "vec_messages_1": SCOPED_MESSAGES,
        "vec_notes_2": 10,
        "vec_messages_2": 0,
    }
    assert halfway["vectors"]["vec_notes_1"] == before["vectors"]["vec_notes_1"]
    new_generation = EmbeddingState(f"{NEW}:latest", 12, 2)
    committed_ids = await ids_with_vectors(path, fake_ollama, new_generation)
    assert committed_ids == {NOTE: {r[0] for r in before["notes"][:10]}, MESSAGE: set()}
    assert (halfway["notes"], halfway["messages"]) == (before["notes"], before["messages"])
    await check_model_in_use(path, fake_ollama, OLD, dim=8, refused=NEW)

    fake_ollama.embedding_dim = 12  # check_model_in_use set the old model's
    fake_ollama.clear()
    second = await run_cli(environment, "notes", "reembed", "--batch", "2")

    assert second.code == 0, second.err
    assert second.out == (
        f"re-embedding resumed and finished: {NOTES - 10} notes, {SCOPED_MESSAGES} messages "
        "now use new-embed:latest (12 dimensions)\n"
    )
    redone = inputs(fake_ollama.requests_to("/api/embed"))
    assert sorted(numbers(redone, "n")) == list(range(10, NOTES))  # nothing committed twice
    assert sorted(numbers(redone, "m")) == list(range(SCOPED_MESSAGES))
    assert len(redone) == NOTES - 10 + SCOPED_MESSAGES

    after = await snapshot(path, fake_ollama)
    assert after["state"] == {"model": "new-embed:latest", "dim": "12", "generation": "2"}
    assert {n: len(v) for n, v in after["vectors"].items()} == {
        "vec_notes_2": NOTES,
        "vec_messages_2": SCOPED_MESSAGES,
    }
    scoped = {r[0] for r in await message_rows(path, fake_ollama) if r[1] != ""}
    assert await ids_with_vectors(path, fake_ollama, new_generation) == {
        NOTE: {r[0] for r in after["notes"]},
        MESSAGE: scoped,
    }
    assert (after["notes"], after["messages"]) == (before["notes"], before["messages"])
    assert after["queue"] == []
    await check_model_in_use(path, fake_ollama, NEW, dim=12, refused=OLD)


async def message_rows(path: Path, fake: FakeOllama) -> list[tuple[Any, ...]]:
    async with opened(path, fake, None) as (db, _):
        return await rows(db, "SELECT id, scope FROM messages ORDER BY id")


async def check_model_in_use(
    path: Path, fake: FakeOllama, model: str, *, dim: int, refused: str
) -> None:
    """`model` opens and finds a note by its vector; `refused` stops with a mismatch."""
    fake.embedding_dim = dim
    async with opened(path, fake, model) as (db, vectors):
        await vectors.prepare()
        assert vectors.state is not None and vectors.state.dim == dim
        store = SqliteNoteStore(db, vectors=vectors)
        # A query that is exactly a note's text has that note's vector: distance 0.
        text = note_text("note-17", "summary of item n17", "body of n17")
        query = await vectors.query_vector(text)
        assert query is not None
        view = visibility_for(Viewer(ALICE, C1))
        [(nearest, distance)] = await vectors.nearest(NOTE, query, view, 1)
        assert distance == pytest.approx(0.0, abs=1e-5)
        hits = await store.search(text, view, k=1, bump=False)
        assert [h.note.id for h in hits] == [nearest]
        assert hits[0].note.topic == "note-17"
    async with opened(path, fake, refused) as (db, vectors):
        with pytest.raises(EmbeddingMismatch, match="lorebot notes reembed"):
            await vectors.prepare()


async def test_history_search_with_vectors_after_a_reembed(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    fake_ollama.models = [OLD, NEW]
    await fill(env / "cli.db", fake_ollama, clock)
    environment = cli_env(fake_ollama, NEW)
    fake_ollama.embedding_dim = 12

    done = await run_cli(environment, "notes", "reembed")
    found = await run_cli(
        environment, "notes", "search", "gateway port", "--history", "--scope", str(C1), "--json"
    )

    assert done.code == 0, done.err
    assert done.out.startswith("re-embedding finished: 30 notes, 8 messages now use new-embed")
    assert found.code == 0, found.err
    hits = json.loads(found.out)
    assert {h["scope"] for h in hits} == {str(C1)}
    [reply] = [h for h in hits if h["content"] == "m01 yep, 8443"]
    assert (reply["author"], reply["link"]) == ("Marco", LINK)
    assert "gateway port" in [b["input"][0] for b in fake_ollama.requests_to("/api/embed")]


@pytest.mark.parametrize("history", [False, True], ids=["notes", "history"])
async def test_a_search_makes_one_embedding_call_its_querys(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock, history: bool
) -> None:
    """The stored dimension is trusted until the query's vector checks it: no probe."""
    fake_ollama.models = [OLD, NEW]
    await fill(env / "cli.db", fake_ollama, clock)
    fake_ollama.requests.clear()
    where = ["--history"] if history else []
    found = await run_cli(
        cli_env(fake_ollama, OLD),
        "notes",
        "search",
        "gateway port",
        *where,
        "--scope",
        str(C1),
        "--json",
    )
    assert found.code == 0, found.err
    assert [r["input"] for r in fake_ollama.requests_to("/api/embed")] == [["gateway port"]], (
        found.out + found.err
    )
    assert json.loads(found.out)


async def test_reembed_empties_the_queue_of_what_it_embedded(
    env: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    """Notes imported while the daemon is stopped wait for a vector; `reembed` gives them
    one, so recall no longer counts them as missing."""
    fake_ollama.models = [OLD, NEW]
    await fill(env / "cli.db", fake_ollama, clock)
    source = env / "more.jsonl"
    source.write_text(
        '{"scope": "channel:slack/C1", "topic": "dns", "summary": "dns is on ns-3"}\n'
    )
    environment = cli_env(fake_ollama, NEW)
    assert (await run_cli(environment, "notes", "import", str(source))).code == 0
    assert (await snapshot(env / "cli.db", fake_ollama))["queue"] != []

    done = await run_cli(environment, "notes", "reembed")

    assert done.code == 0, done.err
    assert (await snapshot(env / "cli.db", fake_ollama))["queue"] == []
