"""lorebot's connection to Ollama: the client, the capability probe, chat, embeddings, the
backoff between failed attempts, and reading Ollama's errors (what each means is in
`bot.model.errors`). One-shot searches embed their query through `bot.model.quick_embed`.

The probe has a short timeout of its own (`ollama.probe_timeout_s`), so a server that takes
connections and never answers is found out in seconds; a chat answer, streamed or not, gets
the generation timeout (`ollama.timeout_s`) as a whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx
import ollama

from bot.backoff import Backoff
from bot.config.model_sections import OllamaSettings
from bot.model.arguments import read_json, valid_text
from bot.model.errors import ModelUnavailable as ModelUnavailable
from bot.model.errors import no_embeddings, refused, unreachable, unreadable
from memory.embedder import model_name
from memory.errors import EmbedderUnavailable, StoreError

_log = logging.getLogger(__name__)

DEFAULT_CONTEXT = 8192
PROBE_TIMEOUT_S = 5.0
BACKOFF_FIRST_S = 2.0
BACKOFF_MAX_S = 60.0
# Everything a call can raise that means "no usable answer"; read in `unavailable`.
FAILURES = (
    ollama.ResponseError,
    httpx.HTTPError,
    ConnectionError,
    TimeoutError,
    ValueError,
    RecursionError,
)

JSON_HEADERS = {"Content-Type": "application/json"}

T = TypeVar("T")
# Receives each piece of a streamed answer's content as it arrives.
OnContent = Callable[[str], Awaitable[None]]


class IncompleteStream(ValueError):
    """A streamed chat answer that ended before its `done` line."""


class StreamError(ollama.ResponseError):
    """An `{"error": ...}` line inside a streamed answer, read as the ollama client reads it
    (status -1), but taking the text as it is: any text, JSON or not, is the message."""

    def __init__(self, error: str) -> None:
        Exception.__init__(self, error)
        self.error = error
        self.status_code = -1


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the probe learnt about a model."""

    name: str
    context_length: int
    supports_tools: bool
    supports_thinking: bool
    context_from: str = "lorebot's default"  # where `context_length` came from
    structured_output: str = ""  # how the server takes a JSON schema, when that is known


def new_backoff(rng: random.Random | None = None) -> Backoff:
    """The delays between attempts at an Ollama that keeps failing, for chat and embeddings."""
    return Backoff(BACKOFF_FIRST_S, BACKOFF_MAX_S, rng=rng)


def unavailable(exc: BaseException, *, host: str, model: str, within: float) -> ModelUnavailable:
    """What a failed call to Ollama means to lorebot; `within` is the call's timeout."""
    status, error = _status(exc)
    if status is not None:
        return refused(status, error, host=host, model=model)
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return unreachable(host, f"no answer within {within:g} s")
    if isinstance(exc, ConnectionError | httpx.ConnectError):
        return unreachable(host, "cannot connect")
    if isinstance(exc, httpx.TransportError):
        return unreachable(host, f"the connection broke: {type(exc).__name__}")
    return unreadable(model, exc)


def _status(exc: BaseException) -> tuple[int | None, str]:
    """The HTTP status and error message of an answer Ollama gave, if it gave one."""
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code, valid_text(exc.error)
    if isinstance(exc, httpx.HTTPStatusError):
        try:
            error = str(json.loads(exc.response.text)["error"])
        except (ValueError, KeyError, TypeError):
            error = exc.response.text[:200]
        return exc.response.status_code, valid_text(error)
    return None, ""


def model_info(model: str, shown: ollama.ShowResponse) -> ModelInfo:
    """Context length, tool and thinking support from `/api/show`; a model that lists no
    capabilities is taken to support tools."""
    capabilities = set(shown.capabilities or [])
    context = next(
        (
            value
            for key, value in (shown.modelinfo or {}).items()
            if key.endswith(".context_length") and isinstance(value, int) and value > 0
        ),
        None,
    )
    return ModelInfo(
        model,
        context or DEFAULT_CONTEXT,
        "tools" in capabilities or not capabilities,
        "thinking" in capabilities,
        "Ollama's /api/show" if context else "lorebot's default: Ollama does not say it",
    )


class OllamaClient:
    """One Ollama server: a model's capabilities, chat and embeddings, each call bounded by
    its timeout and each failure raised as `ModelUnavailable`. Close it (or use `async
    with`) to close its connections."""

    def __init__(
        self, host: str, *, timeout_s: float, probe_timeout_s: float = PROBE_TIMEOUT_S
    ) -> None:
        self.host = host
        self.timeout_s = timeout_s
        self.probe_timeout_s = probe_timeout_s
        # Each call is bounded as a whole by asyncio.timeout; connecting never takes long.
        timeouts = httpx.Timeout(None, connect=probe_timeout_s)
        self._api = ollama.AsyncClient(host=host, timeout=timeouts)
        # /api/chat is read here rather than by ollama's ChatResponse, which rejects
        # tool-call arguments sent as a JSON string: the whole reply would be lost.
        self._http = httpx.AsyncClient(base_url=host, timeout=timeouts)
        self._closed = False

    @classmethod
    def for_settings(cls, settings: OllamaSettings) -> OllamaClient:
        """The client of the configured Ollama, with its two timeouts."""
        return cls(
            settings.host, timeout_s=settings.timeout_s, probe_timeout_s=settings.probe_timeout_s
        )

    async def fetch_model_info(self, model: str) -> ModelInfo:
        """Probe `model` (`/api/show`) within the probe timeout."""

        async def show() -> ModelInfo:
            return model_info(model, await self._api.show(model))

        return await self._call(show(), model, self.probe_timeout_s)

    async def fetch_chat(self, request: Mapping[str, Any]) -> Any:
        """The decoded body of one non-streaming `/api/chat` call, within the generation
        timeout, read by `read_json`: a number no JSON encoder writes back is a `BadNumber`."""

        async def post() -> Any:
            response = await self._http.post(
                "/api/chat", content=_json_body(request), headers=JSON_HEADERS
            )
            response.raise_for_status()
            return read_json(response.text)

        return await self._call(post(), str(request.get("model", "")), self.timeout_s)

    async def stream_chat(self, request: Mapping[str, Any], on_content: OnContent) -> Any:
        """One streamed `/api/chat` call, awaiting `on_content` with each piece of content as
        it arrives; returns the body a non-streaming call would have. The whole stream gets
        the generation timeout; whatever `on_content` raises propagates as it is."""
        reply = StreamedReply()
        deadline = asyncio.timeout(self.timeout_s)
        in_sink = False
        try:
            async with (
                deadline,
                self._http.stream(
                    "POST", "/api/chat", content=_json_body(request), headers=JSON_HEADERS
                ) as response,
            ):
                await _raise_for_status(response)
                async for line in response.aiter_lines():
                    if delta := reply.add(line):
                        in_sink = True
                        await on_content(delta)
                        in_sink = False
            return reply.body()
        except FAILURES as exc:
            if in_sink and not deadline.expired():
                raise  # the receiver failed, not the model
            model = str(request.get("model", ""))
            raise unavailable(exc, host=self.host, model=model, within=self.timeout_s) from exc

    async def fetch_embeddings(
        self, model: str, texts: Sequence[str], *, timeout_s: float | None = None
    ) -> list[list[float]]:
        """One vector per text from `/api/embed`, within `timeout_s` (default: the
        generation timeout)."""

        async def embed() -> list[list[float]]:
            response = await self._api.embed(model=model, input=list(texts))
            return [list(vector) for vector in response.embeddings]

        return await self._call(embed(), model, timeout_s or self.timeout_s)

    async def _call(self, call: Awaitable[T], model: str, within: float) -> T:
        try:
            async with asyncio.timeout(within):
                return await call
        except FAILURES as exc:
            raise unavailable(exc, host=self.host, model=model, within=within) from exc

    async def close(self) -> None:
        """Close the connections; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self._http.aclose()
        await self._api.close()  # type: ignore[no-untyped-call]  # public, untyped in 0.6

    async def __aenter__(self) -> OllamaClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _json_body(request: Mapping[str, Any]) -> bytes:
    """The request as httpx would send it with `json=`, but where it holds a lone surrogate
    (from a tool's output, say) that goes as its `\\u` escape, which Ollama reads as U+FFFD,
    rather than failing the call as a UTF-8 encoder does."""
    try:
        text = json.dumps(request, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(request, allow_nan=False, separators=(",", ":")).encode()


async def _raise_for_status(response: httpx.Response) -> None:
    """Raise `httpx.HTTPStatusError` for an error status, with the body read for its message."""
    if response.is_error:
        await response.aread()
        response.raise_for_status()


class StreamedReply:
    """The NDJSON lines of a streamed chat answer, joined into the body a non-streaming call
    returns: content and thinking concatenated, tool calls of every line collected."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[Any] = []
        self._malformed_calls: Any = None  # a `tool_calls` that is not a list, kept as sent
        self._done: dict[str, Any] | None = None

    def add(self, line: str) -> str:
        """Take one line; return its piece of content ("" when it has none), its text made
        valid (U+FFFD for a lone surrogate). An error line raises `StreamError`, an
        undecodable one `ValueError`."""
        if not line.strip():
            return ""
        chunk = read_json(line)
        if not isinstance(chunk, dict):
            return ""
        if "error" in chunk:
            raise StreamError(valid_text(str(chunk["error"])))
        if chunk.get("done") is True:
            self._done = chunk
        message = chunk.get("message")
        if not isinstance(message, dict):
            return ""
        if isinstance(thinking := message.get("thinking"), str):
            self._thinking.append(valid_text(thinking))
        self._add_calls(message.get("tool_calls"))
        content = message.get("content")
        if not isinstance(content, str):
            return ""
        content = valid_text(content)
        self._content.append(content)
        return content

    def _add_calls(self, calls: Any) -> None:
        if isinstance(calls, list):
            self._calls.extend(calls)
        elif calls:
            self._malformed_calls = calls

    def body(self) -> dict[str, Any]:
        """The whole answer, shaped like a non-streaming `/api/chat` body; `IncompleteStream`
        when the `done` line never came."""
        if self._done is None:
            raise IncompleteStream("the answer ended before its last line")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content)}
        if self._thinking:
            message["thinking"] = "".join(self._thinking)
        calls = self._calls if self._malformed_calls is None else self._malformed_calls
        if calls:
            message["tool_calls"] = calls
        return {**self._done, "message": message}


class EmbeddingClient(Protocol):
    """What an embedder needs of a model server's client."""

    timeout_s: float
    probe_timeout_s: float

    async def fetch_embeddings(
        self, model: str, texts: Sequence[str], *, timeout_s: float | None = None
    ) -> list[list[float]]: ...

    async def close(self) -> None: ...


class ServerEmbedder:
    """lorebot's `Embedder` on a model server's client, batched by the caller. A failure
    says in `retry_after` when to ask again. Until the model has answered (and after it
    failed) calls get the short probe timeout, so a server that never answers holds nobody
    up for long."""

    def __init__(
        self, client: EmbeddingClient, model: str, *, backoff: Backoff | None = None
    ) -> None:
        self._model = model
        self._client = client
        self.backoff = backoff or new_backoff()
        self._answering = False

    @property
    def model(self) -> str:
        """The model's name, as recorded with its vectors."""
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text; `EmbedderUnavailable` (with `retry_after`) when the server
        cannot give them now."""
        if not texts:
            return []
        client = self._client
        within = client.timeout_s if self._answering else client.probe_timeout_s
        try:
            vectors = await client.fetch_embeddings(self._model, texts, timeout_s=within)
        except ModelUnavailable as exc:
            self._answering = False
            raise EmbedderUnavailable(
                no_embeddings(self._model, exc), retry_after=self.backoff.next_delay()
            ) from exc
        self._answering = True
        self.backoff.reset()
        if len(vectors) != len(texts):
            raise StoreError(f"the model returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    async def aclose(self) -> None:
        """Close the connections; safe to call twice."""
        await self._client.close()


class OllamaEmbedder(ServerEmbedder):
    """Vectors from Ollama's `/api/embed`, named as Ollama names the model (`:latest`)."""

    def __init__(
        self,
        host: str,
        model: str,
        *,
        timeout_s: float = 60.0,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        backoff: Backoff | None = None,
    ) -> None:
        client = OllamaClient(host, timeout_s=timeout_s, probe_timeout_s=probe_timeout_s)
        super().__init__(client, model_name(model), backoff=backoff)
