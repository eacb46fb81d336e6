"""A scriptable fake Ollama HTTP server that the real ``ollama`` client talks to.

Start one with the ``fake_ollama`` fixture (or ``FakeOllama().start()``), point
``ollama.AsyncClient(host=fake.url)`` at it, script what the "model" says, then assert on
what the client sent (``fake.chat_requests``)::

    fake.reply("Hello")                          # next /api/chat answer
    fake.tool_call("search_notes", {"q": "vpn"}) # a reply that calls a tool
    fake.error(500, "out of memory")             # HTTP 500 {"error": ...}
    fake.stream_error("oom", partial="Hel")      # a stream: "Hel", then an error line
    fake.stream_cut(partial="Hel")               # a stream: "Hel", then the connection drops
    fake.stream_stall(partial="Hel")             # a stream: "Hel", then nothing, ever
    fake.raw_message({"content": "", "tool_calls": 5})  # a malformed message, sent as given
    fake.raw('{"message": [[[[...')              # a chat response body, byte for byte
    fake.raw_stream(['{"message": ...}', ...])   # NDJSON lines, each written as given
    fake.delay(5.0)                              # the next chat answer waits 5 s
    fake.vectors["some text"] = [1.0, 0.0, ...]  # /api/embed returns this for that text
    fake.hold_embeds(after=3)                    # embed requests after the 3rd wait …
    fake.release_embeds()                        # … until released
    fake.hold_chats()                            # chat requests wait …
    fake.release_chats()                         # … until released
    await fake.down()                            # stop listening: connection refused
    await fake.up()                              # listen again on the same port

How ollama 0.6.3's ``AsyncClient`` reacts (seen against the real client; the wire format
the fake must keep is checked in ``test_fake_ollama.py``):

- HTTP error status: ``ollama.ResponseError`` with ``.status_code`` and ``.error`` (the
  ``error`` field of the body), for both streaming and non-streaming calls. An
  ``{"error": ...}`` line inside a stream raises ``ResponseError`` with ``status_code -1``.
- Connection refused (``down()``): non-streaming calls raise the builtin ``ConnectionError``
  (the client wraps ``httpx.ConnectError``); streaming calls raise ``httpx.ConnectError``
  unwrapped, and only when the returned iterator is first advanced.
- Server dropping an accepted request (``down()`` while a reply is delayed): an unwrapped
  ``httpx.TransportError`` (``httpx.ReadError`` here; ``RemoteProtocolError`` is possible),
  which is not a ``ConnectionError``.
- Timeouts: ``asyncio.timeout`` raises the builtin ``TimeoutError``; an httpx timeout
  (``AsyncClient(host=..., timeout=0.1)``) raises ``httpx.ReadTimeout``, unwrapped.
- Tool-call ``arguments`` sent as a JSON *string* (OpenAI style): the client fails to build
  its ``ChatResponse`` and raises ``pydantic.ValidationError`` (a ``ValueError``), so the
  reply is lost. See ``FakeOllama.tool_call``.

Catch-all for "Ollama is unreachable or broke the connection": ``(ConnectionError,
httpx.TransportError)``; for "Ollama answered with an error": ``ollama.ResponseError``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest_asyncio
from aiohttp import web

from tests.support.polling import HANG_GUARD_S

__all__ = ["FakeOllama", "Recorded", "fake_ollama"]

Body = dict[str, Any]

JSON_TYPE = "application/json"
NDJSON_TYPE = "application/x-ndjson"


@dataclass(frozen=True)
class Recorded:
    """One request the fake received: its path and its JSON body (``{}`` when none)."""

    path: str
    body: Body


@dataclass(frozen=True)
class _Reply:
    """A scripted chat answer."""

    content: str = ""
    thinking: str | None = None
    tool_calls: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class _Error:
    """A scripted chat failure: an HTTP status, or an error line inside a stream."""

    status: int
    message: str
    in_stream: bool = False
    partial: str = ""
    cut: bool = False  # drop the connection instead of sending an error
    stall: bool = False  # send nothing more, until the client goes away
    more: str = ""  # with `stall`: content sent `more_after_s` after `partial`, first
    more_after_s: float = 0.0


@dataclass(frozen=True)
class _Raw:
    """A scripted chat response body, sent byte for byte as HTTP 200."""

    body: bytes


@dataclass(frozen=True)
class _RawStream:
    """A scripted streamed answer: NDJSON lines, each written byte for byte as it is."""

    lines: tuple[bytes, ...]


_Scripted = _Reply | _Error | _Raw | _RawStream


def _default_reply(body: Body) -> str:
    return "ok"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json(data: Any, status: int = 200) -> web.Response:
    """A JSON response whose Content-Type is exactly ``application/json``."""
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": JSON_TYPE}
    )


def _normalize(model: str) -> str:
    """Ollama's model-name rule: a name without a tag means ``:latest``."""
    return model if ":" in model else f"{model}:latest"


def _count_tokens(text: str) -> int:
    return len(text.split())


def _split(text: str) -> list[str]:
    """Stream pieces: one word with its trailing whitespace each; they join back to ``text``."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _as_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """Accept ``{"function": {...}}`` as-is, wrap a bare ``{"name", "arguments"}``."""
    return call if "function" in call else {"function": call}


def embedding(text: str, dim: int = 8) -> list[float]:
    """The deterministic unit vector the fake returns for ``text``."""
    raw: list[float] = []
    counter = 0
    while len(raw) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    vector = raw[:dim]
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


@dataclass
class FakeOllama:
    """A fake Ollama server on 127.0.0.1 with a FIFO queue of scripted chat replies.

    Configuration attributes may be changed at any time, also after ``start()``.
    ``default_reply(body)`` gives the content of the answer when the queue is empty.
    """

    models: list[str] = field(default_factory=lambda: ["qwen3:8b"])
    capabilities: list[str] = field(default_factory=lambda: ["completion", "tools", "thinking"])
    context_length: int = 32768
    family: str = "qwen3"
    embedding_dim: int = 8
    version: str = "0.12.6"
    default_reply: Callable[[Body], str] = _default_reply
    # Embedding overrides, see ``vector_for``: exact texts, then texts containing a key.
    vectors: dict[str, list[float]] = field(default_factory=dict)
    vectors_containing: dict[str, list[float]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list, init=False)

    _queue: deque[_Scripted] = field(default_factory=deque, init=False, repr=False)
    _delays: deque[float] = field(default_factory=deque, init=False, repr=False)
    _runner: web.AppRunner | None = field(default=None, init=False, repr=False)
    _site: web.TCPSite | None = field(default=None, init=False, repr=False)
    _port: int | None = field(default=None, init=False, repr=False)
    _arrived: asyncio.Event | None = field(default=None, init=False, repr=False)
    _hold_after: int | None = field(default=None, init=False, repr=False)
    _released: asyncio.Event | None = field(default=None, init=False, repr=False)
    _chats_released: asyncio.Event | None = field(default=None, init=False, repr=False)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1 on a free port."""
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_post("/api/chat", self._chat)
        app.router.add_post("/api/show", self._show)
        app.router.add_get("/api/tags", self._tags)
        app.router.add_get("/api/ps", self._ps)
        app.router.add_post("/api/embed", self._embed)
        app.router.add_post("/api/embeddings", self._embeddings)
        app.router.add_get("/api/version", self._version)
        app.router.add_get("/", self._root)
        # handler_cancellation: a handler stops (e.g. in a delay) when its client goes away.
        self._runner = web.AppRunner(
            app, handle_signals=False, handler_cancellation=True, shutdown_timeout=0.5
        )
        await self._runner.setup()
        self._arrived = asyncio.Event()
        await self._listen(0)

    async def close(self) -> None:
        """Stop the server and drop its connections; safe to call twice."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._drop_connections(runner)
        self._site = None
        await runner.cleanup()

    async def down(self) -> None:
        """Behave like a stopped Ollama: stop listening and drop every open connection.

        New requests get a real "connection refused"; requests in flight are cut off.
        """
        if self._site is None or self._runner is None:
            return
        site, self._site = self._site, None
        await site.stop()
        self._drop_connections(self._runner)
        # Let the loop close the sockets, so the client's pool sees them as closed.
        for _ in range(3):
            await asyncio.sleep(0)

    async def up(self) -> None:
        """Listen again, on the same port as before ``down()``."""
        if self._site is not None or self._runner is None:
            return
        await self._listen(self._port or 0)

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:PORT``, to pass as the client's ``host``."""
        if self._port is None:
            raise RuntimeError("FakeOllama is not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def is_up(self) -> bool:
        """Whether the fake is listening."""
        return self._site is not None

    async def _listen(self, port: int) -> None:
        assert self._runner is not None
        site = web.TCPSite(self._runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        self._site = site
        self._port = int(self._runner.addresses[0][1])  # the only site: this one

    @staticmethod
    def _drop_connections(runner: web.AppRunner) -> None:
        if runner.server is not None:
            for connection in runner.server.connections:
                connection.force_close()

    # -- scripting -------------------------------------------------------------------------

    def reply(
        self,
        content: str = "",
        *,
        thinking: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
    ) -> None:
        """Queue a chat answer.

        ``tool_calls`` items are ``{"function": {"name": ..., "arguments": {...}}}``; a bare
        ``{"name": ..., "arguments": ...}`` is wrapped in ``function`` for you.
        """
        calls = [_as_tool_call(call) for call in tool_calls] if tool_calls is not None else None
        self._queue.append(_Reply(content, thinking, calls))

    def tool_call(self, name: str, arguments: dict[str, Any] | str, *, content: str = "") -> None:
        """Queue an answer whose message carries one tool call.

        A ``str`` ``arguments`` is sent as-is, as a JSON string (the OpenAI style some small
        models emit), e.g. ``"arguments": "{\\"q\\": \\"vpn\\"}"``. ollama 0.6.3 declares
        ``arguments: Mapping[str, Any]`` and does not parse strings, so building the
        ``ChatResponse`` fails: ``client.chat`` raises ``pydantic.ValidationError`` (a
        ``ValueError``, message "Input should be a valid dictionary"); when streaming it is
        raised while iterating, at the chunk carrying the tool call (content chunks before
        it arrive normally). Non-streaming, the content of that reply is lost with it.
        """
        self.reply(content, tool_calls=[{"function": {"name": name, "arguments": arguments}}])

    def error(self, status: int, message: str) -> None:
        """Queue an HTTP error answer ``status`` with body ``{"error": message}``.

        The client raises ``ollama.ResponseError`` with ``status_code == status`` and
        ``error == message``.
        """
        self._queue.append(_Error(status, message))

    def stream_error(self, message: str, *, partial: str = "") -> None:
        """Queue a failure in the middle of a stream: ``partial`` content, then an error line.

        The client raises ``ollama.ResponseError(message)`` (``status_code == -1``) while
        iterating. A non-streaming request gets HTTP 500 ``{"error": message}`` instead.
        """
        self._queue.append(_Error(500, message, in_stream=True, partial=partial))

    def stream_stall(self, *, partial: str = "", more: str = "", after_s: float = 0.0) -> None:
        """Queue a stream that sends ``partial`` content (and ``more`` ``after_s`` later),
        then nothing more, as a model server that hangs mid-answer (the handler ends when
        its client goes away)."""
        self._queue.append(
            _Error(500, "", True, partial, stall=True, more=more, more_after_s=after_s)
        )

    def stream_cut(self, *, partial: str = "") -> None:
        """Queue an answer whose connection drops midway: status 200 and ``partial`` content
        (streamed, or nothing when not streaming), then the server closes the connection
        without finishing the body. httpx raises ``httpx.RemoteProtocolError`` ("incomplete
        chunked read") while reading."""
        self._queue.append(_Error(500, "", in_stream=True, partial=partial, cut=True))

    def raw(self, body: str | bytes) -> None:
        """Queue a chat response body sent exactly as given with HTTP 200 and a JSON
        Content-Type, streaming or not: invalid JSON, deeply nested JSON, wrong types."""
        self._queue.append(_Raw(body.encode() if isinstance(body, str) else body))

    def raw_stream(self, lines: Sequence[str]) -> None:
        """Queue a streamed answer of NDJSON ``lines`` (each without its newline), written
        one at a time exactly as given, e.g. with a ``\\ud800`` escape or ``NaN`` in it;
        the last should be ``done``. Sent as a stream whether or not the request asked for
        one."""
        self._queue.append(_RawStream(tuple(line.encode() for line in lines)))

    def raw_message(self, message: Any, *, model: str = "qwen3:8b") -> None:
        """Queue a complete, done chat response whose ``message`` is ``message`` as given,
        unchecked: e.g. ``{"role": "assistant", "content": "", "tool_calls": 5}``."""
        body = {"model": model, "created_at": _now(), "message": message, "done": True}
        self.raw(json.dumps(body))

    def delay(self, seconds: float) -> None:
        """Make the next /api/chat answer wait ``seconds`` first (delays queue up FIFO)."""
        self._delays.append(seconds)

    def hold_embeds(self, *, after: int) -> None:
        """Answer only the first ``after`` /api/embed requests (counted among the recorded
        requests, so ``clear()`` restarts the count); later ones are recorded on arrival,
        then wait until ``release_embeds()`` or until their client goes away.

        A test can thus stop a client at an exact point of a batch job without timing:
        ``await fake.wait_for_requests(after + 1, "/api/embed")`` returns once the client
        has handled the first ``after`` answers and sent the next request.
        """
        self._hold_after = after
        self._released = asyncio.Event()

    def release_embeds(self) -> None:
        """Answer the held /api/embed requests, and the following ones at once."""
        self._hold_after = None
        if self._released is not None:
            self._released.set()

    def hold_chats(self) -> None:
        """Hold the /api/chat requests from now on: each is recorded on arrival, then waits
        until ``release_chats()`` (or until its client goes away) before it is answered.

        A test can thus keep a turn waiting for the model as long as it needs, and let the
        answer come at the moment it chooses: ``await fake.wait_for_requests(n)`` returns
        once the n-th request is held.
        """
        self._chats_released = asyncio.Event()

    def release_chats(self) -> None:
        """Answer the held /api/chat requests, and the following ones at once."""
        released, self._chats_released = self._chats_released, None
        if released is not None:
            released.set()

    def _embed_gate(self) -> asyncio.Event | None:
        """What a just-recorded /api/embed request must wait for, when it is held."""
        if self._hold_after is None or len(self.requests_to("/api/embed")) <= self._hold_after:
            return None
        return self._released

    def vector_for(self, text: str) -> list[float]:
        """The vector /api/embed returns for ``text``: ``vectors[text]`` when it is a key,
        else the vector of the first key of ``vectors_containing`` (in insertion order)
        that occurs in ``text``, else ``embedding(text, embedding_dim)``. Overrides are
        returned exactly as given: not normalised, and of their own length."""
        if text in self.vectors:
            return list(self.vectors[text])
        for part, vector in self.vectors_containing.items():
            if part in text:
                return list(vector)
        return embedding(text, self.embedding_dim)

    def clear(self) -> None:
        """Forget queued replies, delays and recorded requests."""
        self._queue.clear()
        self._delays.clear()
        self.requests.clear()

    @property
    def pending(self) -> int:
        """How many scripted chat answers are still queued."""
        return len(self._queue)

    # -- inspection ------------------------------------------------------------------------

    @property
    def chat_requests(self) -> list[Body]:
        """The JSON bodies of the /api/chat calls, in order."""
        return [r.body for r in self.requests if r.path == "/api/chat"]

    def requests_to(self, path: str) -> list[Body]:
        """The JSON bodies of the calls to ``path``, in order."""
        return [r.body for r in self.requests if r.path == path]

    async def wait_for_requests(
        self, count: int, path: str = "/api/chat", within: float = HANG_GUARD_S
    ) -> list[Body]:
        """Wait up to ``within`` s for ``count`` requests to ``path``; return their bodies."""
        async with asyncio.timeout(within):
            while len(bodies := self.requests_to(path)) < count:
                assert self._arrived is not None
                self._arrived.clear()
                await self._arrived.wait()
        return bodies

    # -- handlers --------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> Body | None:
        """Record the request; return its JSON object body, or None if it is not one."""
        body: Body | None = {}
        if request.can_read_body:
            try:
                parsed = await request.json()
            except ValueError:
                parsed = None
            body = parsed if isinstance(parsed, dict) else None
        self.requests.append(Recorded(request.path, body if body is not None else {}))
        if self._arrived is not None:
            self._arrived.set()
        return body

    def _unknown(self, model: str) -> web.Response | None:
        known = {_normalize(m) for m in self.models}
        if _normalize(model) in known:
            return None
        return _json({"error": f"model '{model}' not found"}, status=404)

    def _usage(self, body: Body, content: str) -> Body:
        prompt = " ".join(
            str(m.get("content") or "") for m in body.get("messages") or [] if isinstance(m, dict)
        )
        prompt_tokens = _count_tokens(prompt) + 1
        eval_tokens = _count_tokens(content) + 1
        return {
            "total_duration": 5_000_000 + 1_000_000 * (prompt_tokens + eval_tokens),
            "load_duration": 1_000_000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 1_000_000 * prompt_tokens,
            "eval_count": eval_tokens,
            "eval_duration": 1_000_000 * eval_tokens,
        }

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if body is None:
            return _json({"error": "invalid request body"}, status=400)
        model = str(body.get("model") or "")
        if not model:
            return _json({"error": "model is required"}, status=400)
        if (missing := self._unknown(model)) is not None:
            return missing
        if body.get("tools") and "tools" not in self.capabilities:
            error = f"registry.ollama.ai/library/{_normalize(model)} does not support tools"
            return _json({"error": error}, status=400)
        if body.get("think") and "thinking" not in self.capabilities:
            return _json({"error": f'"{model}" does not support thinking'}, status=400)

        if (held := self._chats_released) is not None:
            await held.wait()
        scripted = self._queue.popleft() if self._queue else _Reply(self.default_reply(body))
        if self._delays:
            await asyncio.sleep(self._delays.popleft())

        stream = body.get("stream", True) is not False  # Ollama streams unless told not to
        if isinstance(scripted, _Raw):
            return web.Response(body=scripted.body, headers={"Content-Type": JSON_TYPE})
        if isinstance(scripted, _RawStream):
            return await self._raw_stream(request, scripted)
        if isinstance(scripted, _Error):
            if scripted.cut or (stream and scripted.in_stream):
                return await self._stream_error(request, model, scripted, stream=stream)
            return _json({"error": scripted.message}, status=scripted.status)
        if stream:
            return await self._stream_reply(request, model, body, scripted)
        return _json(self._final_chunk(model, body, scripted, full=True))

    def _message(self, content: str, thinking: str | None = None, tool_calls: Any = None) -> Body:
        message: Body = {"role": "assistant", "content": content}
        if thinking is not None:
            message["thinking"] = thinking
        if tool_calls is not None:
            message["tool_calls"] = tool_calls
        return message

    def _chunk(self, model: str, message: Body) -> Body:
        return {"model": model, "created_at": _now(), "message": message, "done": False}

    def _final_chunk(self, model: str, body: Body, reply: _Reply, *, full: bool) -> Body:
        """The last (or only) answer object; with ``full`` it carries the whole message."""
        message = (
            self._message(reply.content, reply.thinking, reply.tool_calls)
            if full
            else self._message("")
        )
        return {
            "model": model,
            "created_at": _now(),
            "message": message,
            "done": True,
            "done_reason": "stop",
            **self._usage(body, reply.content),
        }

    async def _start_stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": NDJSON_TYPE})
        await response.prepare(request)
        return response

    @staticmethod
    async def _write(response: web.StreamResponse, data: Body) -> None:
        await response.write(json.dumps(data).encode() + b"\n")

    async def _stream_reply(
        self, request: web.Request, model: str, body: Body, reply: _Reply
    ) -> web.StreamResponse:
        response = await self._start_stream(request)
        for piece in _split(reply.thinking or ""):
            await self._write(response, self._chunk(model, self._message("", thinking=piece)))
        for piece in _split(reply.content):
            await self._write(response, self._chunk(model, self._message(piece)))
        if reply.tool_calls is not None:
            message = self._message("", tool_calls=reply.tool_calls)
            await self._write(response, self._chunk(model, message))
        await self._write(response, self._final_chunk(model, body, reply, full=False))
        await response.write_eof()
        return response

    async def _raw_stream(self, request: web.Request, scripted: _RawStream) -> web.StreamResponse:
        response = await self._start_stream(request)
        for line in scripted.lines:
            await response.write(line + b"\n")
        await response.write_eof()
        return response

    async def _stream_error(
        self, request: web.Request, model: str, error: _Error, *, stream: bool
    ) -> web.StreamResponse:
        response = await self._start_stream(request)
        for piece in _split(error.partial if stream else ""):
            await self._write(response, self._chunk(model, self._message(piece)))
        if error.cut:
            assert request.transport is not None
            request.transport.close()
            return response
        if error.stall:
            await asyncio.sleep(error.more_after_s)
            for piece in _split(error.more):
                await self._write(response, self._chunk(model, self._message(piece)))
            await asyncio.sleep(3600)
        await self._write(response, {"error": error.message})
        await response.write_eof()
        return response

    def _details(self) -> Body:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": "8.2B",
            "quantization_level": "Q4_K_M",
        }

    def _digest(self, model: str) -> str:
        return hashlib.sha256(_normalize(model).encode()).hexdigest()

    async def _show(self, request: web.Request) -> web.Response:
        body = await self._record(request) or {}
        model = str(body.get("model") or body.get("name") or "")
        if (missing := self._unknown(model)) is not None:
            return missing
        family = self.family
        return _json(
            {
                "license": "Apache License 2.0",
                "modelfile": f"# Modelfile generated by the fake\nFROM {model}\n",
                "parameters": "temperature 0.6\ntop_k 20\ntop_p 0.95",
                "template": "{{ .System }}\n{{ .Prompt }}",
                "details": self._details(),
                "model_info": {
                    "general.architecture": family,
                    "general.parameter_count": 8_190_735_360,
                    f"{family}.context_length": self.context_length,
                    f"{family}.embedding_length": 4096,
                    f"{family}.block_count": 36,
                },
                "capabilities": list(self.capabilities),
                "modified_at": "2025-01-01T00:00:00Z",
            }
        )

    async def _tags(self, request: web.Request) -> web.Response:
        await self._record(request)
        return _json(
            {
                "models": [
                    {
                        "name": _normalize(m),
                        "model": _normalize(m),
                        "modified_at": "2025-01-01T00:00:00Z",
                        "size": 5_225_376_047,
                        "digest": self._digest(m),
                        "details": self._details(),
                    }
                    for m in self.models
                ]
            }
        )

    async def _ps(self, request: web.Request) -> web.Response:
        await self._record(request)
        return _json({"models": []})

    async def _embed(self, request: web.Request) -> web.Response:
        body = await self._record(request) or {}
        model = str(body.get("model") or "")
        if (missing := self._unknown(model)) is not None:
            return missing
        if (gate := self._embed_gate()) is not None:
            await gate.wait()
        raw = body.get("input", "")
        texts: Sequence[Any] = [raw] if isinstance(raw, str) else raw
        vectors = [self.vector_for(str(text)) for text in texts]
        tokens = sum(_count_tokens(str(text)) for text in texts)
        return _json(
            {
                "model": model,
                "embeddings": vectors,
                "total_duration": 1_000_000,
                "load_duration": 100_000,
                "prompt_eval_count": tokens,
            }
        )

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await self._record(request) or {}
        model = str(body.get("model") or "")
        if (missing := self._unknown(model)) is not None:
            return missing
        return _json({"embedding": self.vector_for(str(body.get("prompt", "")))})

    async def _version(self, request: web.Request) -> web.Response:
        await self._record(request)
        return _json({"version": self.version})

    async def _root(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.Response(text="Ollama is running")


@pytest_asyncio.fixture
async def fake_ollama() -> AsyncIterator[FakeOllama]:
    """A started ``FakeOllama``; closed after the test."""
    fake = FakeOllama()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
