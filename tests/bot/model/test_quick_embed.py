"""One-shot commands embed their query with `bot.model.quick_embed` (the standard library's
HTTP client), not the ollama client, whose import alone costs more than a `notes search`
may take. Its answers and its failures must read as the daemon's embedder's do."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from bot.model.ollama import OllamaEmbedder
from bot.model.quick_embed import QuickEmbedder
from memory.embedder import Embedder
from memory.errors import EmbedderUnavailable
from tests.fakes.ollama import FakeOllama
from tests.support.import_probe import PROBE
from tests.support.vectors import C1, MODEL, fill

# A direction no word of the notes points to: only the vectors can find the note below.
PORTAL = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


async def _embedders(fake: FakeOllama) -> list[Embedder]:
    return [
        QuickEmbedder(fake.url, MODEL, timeout_s=5.0),
        OllamaEmbedder(fake.url, MODEL, timeout_s=5.0, probe_timeout_s=5.0),
    ]


async def _close(embedders: list[Embedder]) -> None:
    for embedder in embedders:
        if isinstance(embedder, OllamaEmbedder):
            await embedder.aclose()


async def test_it_gives_the_vectors_the_daemons_embedder_gives(fake_ollama: FakeOllama) -> None:
    fake_ollama.models.append(MODEL)
    fake_ollama.vectors["the portal"] = PORTAL
    quick, daemon = embedders = await _embedders(fake_ollama)
    try:
        texts = ["the portal", "where is staging?", "é ünïcode ✓"]
        assert await quick.embed(texts) == await daemon.embed(texts)
        assert (await quick.embed(["the portal"]))[0] == PORTAL
        assert quick.model == daemon.model == f"{MODEL}:latest"
        assert await quick.embed([]) == []
    finally:
        await _close(embedders)
    sent = fake_ollama.requests_to("/api/embed")
    assert sent[0] == {"model": f"{MODEL}:latest", "input": texts}


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (
            "missing",
            "no embeddings from embed-test:latest: embed-test:latest is not installed "
            "at {url}: run `ollama pull embed-test:latest`",
        ),
        ("down", "no embeddings from embed-test:latest: unreachable at {url} (cannot connect)"),
    ],
)
async def test_its_failures_read_as_the_daemons_embedder_says_them(
    fake_ollama: FakeOllama, failure: str, detail: str
) -> None:
    if failure == "down":
        fake_ollama.models.append(MODEL)
        await fake_ollama.down()
    embedders = await _embedders(fake_ollama)
    try:
        said = []
        for embedder in embedders:
            with pytest.raises(EmbedderUnavailable) as failed:
                await embedder.embed(["where is staging?"])
            said.append(str(failed.value))
    finally:
        await _close(embedders)
    assert said == [detail.format(url=fake_ollama.url)] * 2


async def test_an_unreadable_or_late_answer_is_unavailable_not_a_crash(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.models.append(MODEL)
    fake_ollama.vectors["broken"] = ["not", "numbers"]  # type: ignore[list-item]
    quick = QuickEmbedder(fake_ollama.url, MODEL, timeout_s=0.3)
    with pytest.raises(EmbedderUnavailable, match=r"sent an unreadable reply \(TypeError\)"):
        await quick.embed(["broken"])
    fake_ollama.hold_embeds(after=1)
    with pytest.raises(EmbedderUnavailable, match=r"unreachable at .* \(no answer within 0.3 s\)"):
        await quick.embed(["held"])
    fake_ollama.release_embeds()


async def _search(fake: FakeOllama, home: Path, *argv: str) -> tuple[int, str, set[str]]:
    """`lorebot ARGV…` in a fresh process with the model set, as a person runs it; its
    output and the top-level packages it imported."""
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "LOREBOT_OLLAMA__HOST": fake.url,
        "LOREBOT_OLLAMA__EMBED_MODEL": MODEL,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        *argv,
        cwd=home,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    text, _, imported = out.decode().rpartition("\nIMPORTED ")
    assert imported, err.decode()
    assert process.returncode is not None
    packages = {name.split(".")[0] for name in json.loads(imported)}
    return process.returncode, text + err.decode(), packages


async def test_notes_search_ranks_by_the_query_vector_without_the_ollama_client(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models.append(MODEL)
    fake_ollama.vectors_containing["gateway fact 3"] = PORTAL
    fake_ollama.vectors_containing["portal"] = PORTAL
    path = tmp_path / "data" / "lorebot" / "lorebot.db"
    path.parent.mkdir(parents=True)
    await fill(path, fake_ollama, embed=100)  # every note and message gets its vector

    for _ in range(2):  # the second run starts from the settings snapshot
        code, out, packages = await _search(
            fake_ollama, tmp_path, "notes", "search", "the portal", "--scope", str(C1)
        )
        assert code == 0, out
        # No word of the query is in a note: only the query's vector ranks them.
        assert out.startswith("channel:slack/C1  - gateway-3: gateway fact 3\n"), out
        assert not packages & {"ollama", "httpx"}, sorted(packages & {"ollama", "httpx"})
    assert [body["input"] for body in fake_ollama.requests_to("/api/embed")][-2:] == [
        ["the portal"],
        ["the portal"],
    ]
