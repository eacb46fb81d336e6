"""lorebot's connection to a server of the OpenAI chat-completions API (vLLM, llama.cpp,
LM Studio, LocalAI, a LiteLLM proxy), through the official `openai` package.

It speaks to the model client (`bot.model.client.Model`) as `OllamaClient` does: requests
come in Ollama's shape and answers go back in it, so turns, streaming, tool calls and the
health and backoff of the model are the same on both backends. Only this module knows the
OpenAI shapes: tool calls carry ids and JSON-string arguments (streamed in pieces), tool
results name the call they answer, and reasoning comes as `reasoning_content`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import openai

from bot.backoff import Backoff
from bot.config.model_sections import OpenAISettings
from bot.model.errors import (
    ModelUnavailable,
    UnreadableReply,
    refused,
    server_text,
    unreachable,
    unreadable,
)
from bot.model.ollama import DEFAULT_CONTEXT, ModelInfo, OnContent, ServerEmbedder
from bot.model.openai_shapes import (
    StreamedCompletion,
    completion_request,
    decoded,
    ollama_body,
    reported_context,
    served_models,
)
from bot.model.quick_embed import openai_vectors
from bot.model.response_formats import (
    STYLES,
    Learnt,
    ResponseFormats,
    other_style,
    server_of,
)

_log = logging.getLogger(__name__)

T = TypeVar("T")

MISSING_FIX = "serve the model at openai.base_url, or set openai.model to one /v1/models lists"
UNREACHABLE_FIX = (
    "start the server, or set openai.base_url (LOREBOT_OPENAI__BASE_URL, or OPENAI_BASE_URL) "
    "to where it runs; lorebot still answers from memory without it"
)
CONTEXT_FIX = (
    "the prompt is longer than the model's context: set openai.context_tokens "
    "(LOREBOT_OPENAI__CONTEXT_TOKENS) to the server's context length"
)
DEFAULT_SOURCE = "lorebot's default: the server does not say it; openai.context_tokens sets it"
# Words servers use when a prompt does not fit the context (vLLM, llama.cpp, LiteLLM).
_CONTEXT_WORDS = ("context length", "context window", "maximum context", "n_ctx", "too long")


def unavailable(
    exc: BaseException, *, url: str, model: str, within: float, secrets: Iterable[str] = ()
) -> ModelUnavailable:
    """What a failed call to the server means to lorebot; `within` is the call's timeout.
    What the server said is kept with `secrets` redacted: some quote back the key they
    refused."""
    if isinstance(exc, openai.APIStatusError):
        message = server_text(_error_message(exc), secrets)
        if exc.status_code == 404:
            return ModelUnavailable(
                f"{model} is not served at {url}: {message}", kind="missing", fix=MISSING_FIX
            )
        if exc.status_code in (401, 403):
            return ModelUnavailable(
                f"{url} refused the API key ({exc.status_code}): {message}",
                kind="refused",
                fix="set openai.api_key (LOREBOT_OPENAI__API_KEY, or OPENAI_API_KEY)",
            )
        if exc.status_code == 400 and any(w in message.lower() for w in _CONTEXT_WORDS):
            return ModelUnavailable(
                f"{url} refused a prompt too long for {model}: {message}",
                kind="too_long",
                fix=CONTEXT_FIX,
            )
        return refused(exc.status_code, message, host=url, model=model, server="the server")
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return unreachable(url, f"no answer within {within:g} s", fix=UNREACHABLE_FIX)
    if isinstance(exc, (openai.APIConnectionError, ConnectionError, *TRANSPORT_ERRORS)):
        why = "cannot connect" if _refused(exc) else "the connection broke"
        return unreachable(url, why, fix=UNREACHABLE_FIX)
    return unreadable(model, exc)


def _refused(exc: BaseException) -> bool:
    """Whether the connection was never made (the SDK's HTTP client wraps the cause)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or type(seen).__name__ == "ConnectError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        text = error.get("message") if isinstance(error, dict) else error
        if text:
            return str(text)
    return str(exc.message)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP client's connection errors, which a stream raises unwrapped when the server
    goes away mid-answer: `httpx2` under openai 3, `httpx` before it."""
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()
# What a stream raises when its connection breaks.
STREAM_BREAKS: tuple[type[BaseException], ...] = (openai.APIConnectionError, *TRANSPORT_ERRORS)
# Everything a call can raise that means "no usable answer", among them `UnreadableReply`
# (a ValueError) for an answer of the wrong shape and RecursionError for one nested too deep
# to decode: slips, not outages. Not TypeError or AttributeError, which would pass lorebot's
# own bugs off as the model's unreadable answers.
FAILURES: tuple[type[BaseException], ...] = (
    openai.OpenAIError,
    *TRANSPORT_ERRORS,
    ConnectionError,
    TimeoutError,
    ValueError,
    RecursionError,
)


class OpenAIClient:
    """One OpenAI-compatible server: a model's capabilities, chat and embeddings, each call
    bounded by its timeout and each failure raised as `ModelUnavailable`, the API key
    redacted from what the server said. Answers are read as JSON by `openai_shapes`: the
    SDK builds its typed objects from whatever a server sends, unchecked."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout_s: float,
        probe_timeout_s: float,
        context_tokens: int | None = None,
        reasoning_effort: str | None = None,
        formats: ResponseFormats | None = None,
    ) -> None:
        self.host = base_url
        self._secrets = (api_key,) if api_key else ()  # what a server may quote back
        self.reasoning_effort = reasoning_effort
        self.timeout_s = timeout_s
        self.probe_timeout_s = probe_timeout_s
        self.context_tokens = context_tokens
        # Each call is bounded as a whole by asyncio.timeout; retries are lorebot's backoff.
        self._api = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "unused",  # servers without keys take any; the SDK wants one
            timeout=openai.Timeout(None, connect=probe_timeout_s),
            max_retries=0,
        )
        self._closed = False
        self.formats = formats or ResponseFormats(None)
        self._servers: dict[str, str] = {}  # each model's `server_of`, from the last probe
        self._props = True  # whether the server may have llama.cpp's /props

    @classmethod
    def for_settings(
        cls, settings: OpenAISettings, formats: ResponseFormats | None = None
    ) -> OpenAIClient:
        return cls(
            settings.base_url,
            api_key=settings.key(),
            timeout_s=settings.timeout_s,
            probe_timeout_s=settings.probe_timeout_s,
            context_tokens=settings.context_tokens,
            reasoning_effort=settings.reasoning_effort,
            formats=formats,
        )

    async def fetch_model_info(self, model: str) -> ModelInfo:
        """Probe `model` in `/v1/models` within the probe timeout. The context length is
        `openai.context_tokens`, else what the server says (`reported_context`: llama.cpp's
        `/props`, asked within a probe timeout of its own, or vLLM's `max_model_len`), else
        lorebot's default; tools are taken as supported."""

        async def listed() -> dict[str, Any]:
            found = served_models(await self._api.get("/models", cast_to=object))
            if model not in found:
                names = ", ".join(sorted(found)) or "none"
                raise ModelUnavailable(
                    f"{model} is not served at {self.host} (it serves: {names})",
                    kind="missing",
                    fix=MISSING_FIX,
                )
            return found[model]

        entry = await self._call(listed(), model, self.probe_timeout_s)
        self._servers[model] = server = server_of(entry)
        if self.context_tokens is not None:
            context, source = self.context_tokens, "openai.context_tokens"
        else:
            said = entry.get("max_model_len") or entry.get("context_length")
            props = None if said else await self._fetch_props()
            context, source = reported_context(entry, props) or (DEFAULT_CONTEXT, DEFAULT_SOURCE)
        learnt = self.formats.get(self.host, model, server)
        return ModelInfo(model, context, True, False, source, learnt.describe() if learnt else "")

    async def _fetch_props(self) -> Any:
        """llama.cpp's `/props` (beside `/v1`), or None from a server without one, which is
        not asked again, or one that does not answer it within the probe timeout."""
        if not self._props:
            return None
        try:
            async with asyncio.timeout(self.probe_timeout_s):
                return await self._api.get(f"{self.host.removesuffix('/v1')}/props", cast_to=object)
        except openai.APIStatusError:
            self._props = False
        except FAILURES as exc:
            _log.debug("no /props from %s: %s", self.host, exc)
        return None

    async def fetch_chat(self, request: Mapping[str, Any]) -> Any:
        """One non-streaming completion, as the body of Ollama's `/api/chat`."""

        async def create() -> Any:
            if request.get("format"):
                return ollama_body(await self._create_structured(request))
            return ollama_body(await self._create(request))

        return await self._call(create(), str(request.get("model", "")), self.timeout_s)

    async def _create_structured(self, request: Mapping[str, Any]) -> Any:
        """A completion held to a JSON schema, sent as the server took one before (kept in
        `formats`), else as the API's `json_schema`; when that is refused, the other way,
        which is then kept for this server."""
        model = str(request.get("model", ""))
        server = self._servers.get(model)
        known = self.formats.get(self.host, model, server)
        style = known.style if known else STYLES[0]
        try:
            completion = await self._create(request, style=style)
        except openai.APIStatusError as exc:
            if "response_format" not in str(exc):
                raise
            completion = await self._create(request, style=other_style(style))
            self.formats.remember(self.host, model, Learnt(other_style(style), style, server))
            return completion
        if known is None:
            self.formats.remember(self.host, model, Learnt(style, None, server))
        return completion

    async def _create(
        self, request: Mapping[str, Any], *, style: str = STYLES[0], stream: bool = False
    ) -> Any:
        """The completion's JSON (with `stream`, its chunks'), for `openai_shapes` to read."""
        body = completion_request(
            request, schema_style=style, reasoning_effort=self.reasoning_effort
        )
        if stream:
            body["stream"] = True
        return await self._api.post(
            "/chat/completions",
            body=body,
            cast_to=object,
            stream=stream,
            stream_cls=openai.AsyncStream[object],
        )

    async def _create_again(self, request: Mapping[str, Any]) -> Any:
        """The request unstreamed, after a stream that failed empty. Such a server may have
        dropped the stream's kept-alive connection: the first try can meet that broken
        connection, and a second gets a new one."""
        try:
            return await self._create(request)
        except openai.APIConnectionError:
            return await self._create(request)

    async def stream_chat(self, request: Mapping[str, Any], on_content: OnContent) -> Any:
        """One streamed completion, awaiting `on_content` with each piece of content as it
        arrives; returns the body a non-streaming call would have. The whole stream gets the
        generation timeout; whatever `on_content` raises propagates as it is."""
        reply = StreamedCompletion()
        deadline = asyncio.timeout(self.timeout_s)
        in_sink = False
        try:
            async with deadline:
                stream = await self._create(request, stream=True)
                try:
                    async with stream:
                        async for chunk in stream:
                            if delta := reply.add(chunk):
                                in_sink = True
                                await on_content(delta)
                                in_sink = False
                except STREAM_BREAKS:
                    if in_sink or reply.chunks:
                        raise
                if reply.chunks == 0:
                    # Some servers (llama.cpp's) fail a stream after its headers and close
                    # it with nothing in it; the same request unstreamed says why (a prompt
                    # longer than the context, say).
                    body = ollama_body(await self._create_again(request))
                    if content := body["message"]["content"]:
                        in_sink = True
                        await on_content(content)
                        in_sink = False
                    return body
            return reply.body()
        except FAILURES as exc:
            if in_sink and not deadline.expired():
                raise  # the receiver failed, not the model
            raise self._unavailable(exc, str(request.get("model", "")), self.timeout_s) from exc

    async def fetch_embeddings(
        self, model: str, texts: Sequence[str], *, timeout_s: float | None = None
    ) -> list[list[float]]:
        """One vector per text from `/v1/embeddings`, within `timeout_s` (default: the
        generation timeout)."""

        async def embed() -> list[list[float]]:
            body = {"model": model, "input": list(texts), "encoding_format": "float"}
            answer = await self._api.post("/embeddings", body=body, cast_to=object)
            try:
                return openai_vectors(decoded(answer))
            except (KeyError, TypeError) as exc:
                raise UnreadableReply(f"embeddings of another shape ({exc!r})") from exc

        return await self._call(embed(), model, timeout_s or self.timeout_s)

    async def _call(self, call: Awaitable[T], model: str, within: float) -> T:
        try:
            async with asyncio.timeout(within):
                return await call
        except ModelUnavailable:
            raise
        except FAILURES as exc:
            raise self._unavailable(exc, model, within) from exc

    def _unavailable(self, exc: BaseException, model: str, within: float) -> ModelUnavailable:
        return unavailable(exc, url=self.host, model=model, within=within, secrets=self._secrets)

    async def close(self) -> None:
        """Close the connections; safe to call twice."""
        if not self._closed:
            self._closed = True
            await self._api.close()

    async def __aenter__(self) -> OpenAIClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class OpenAIEmbedder(ServerEmbedder):
    """Vectors from an OpenAI-compatible server's `/v1/embeddings`, the model named as the
    server names it (no Ollama `:latest` is added)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        timeout_s: float,
        probe_timeout_s: float,
        backoff: Backoff | None = None,
    ) -> None:
        client = OpenAIClient(
            base_url, api_key=api_key, timeout_s=timeout_s, probe_timeout_s=probe_timeout_s
        )
        super().__init__(client, model, backoff=backoff)
