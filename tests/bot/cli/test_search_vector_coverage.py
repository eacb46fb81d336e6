"""`lorebot notes search` with an embedding model says on stderr when its ranking is by
words alone or when only some notes or messages have vectors yet, and keeps stdout clean,
run as the real command in a subprocess against the fake Ollama."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.ollama import FakeOllama
from tests.support.paths import ROOT as ROOT
from tests.support.vectors import C1, MODEL, NOTES, fill


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


async def lorebot(fake: FakeOllama, *argv: str) -> Run:
    """`lorebot ARGV…` with the embedding model set, while this loop serves the fake."""
    environment = {
        **os.environ,
        "LOREBOT_OLLAMA__HOST": fake.url,
        "LOREBOT_OLLAMA__EMBED_MODEL": MODEL,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        *argv,
        cwd=ROOT,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


async def test_partial_vectors_are_counted_on_stderr(env: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.models = [MODEL]
    await fill(env / "cli.db", fake_ollama, embed=3)

    notes = await lorebot(fake_ollama, "notes", "search", "gateway", "--scope", str(C1), "--json")
    history = await lorebot(
        fake_ollama, "notes", "search", "gateway", "--scope", str(C1), "--history"
    )

    assert notes.code == 0, notes.err
    assert len(json.loads(notes.out)) == NOTES  # stdout stays JSON
    assert "note: vectors for 3 of 5 notes; the rest are ranked by their words alone" in notes.err
    assert history.code == 0, history.err
    assert "note: vectors for 0 of 3 messages" in history.err
    assert "the gateway moved" in history.out

    await fill(env / "cli.db", fake_ollama, embed=2 * NOTES + 6)  # everything embedded
    complete = await lorebot(fake_ollama, "notes", "search", "gateway", "--scope", str(C1))
    assert complete.code == 0, complete.err
    assert "note:" not in complete.err
    assert complete.out.count("gateway fact") == NOTES


async def test_an_unanswering_model_means_words_alone_and_says_so(
    env: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = [MODEL]
    await fill(env / "cli.db", fake_ollama, embed=NOTES + 3)
    await fake_ollama.down()

    run = await lorebot(fake_ollama, "notes", "search", "gateway", "--scope", str(C1))

    assert run.code == 0, run.err
    said = f"note: ranked by words alone: the embedding model {MODEL}:latest did not answer"
    assert said in run.err
    assert run.out.count("gateway fact") == NOTES
