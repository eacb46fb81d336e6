"""The chat model: its capabilities, whether it answers now, and chat calls that fail fast
while it does not.

Start-up never waits for the model: the daemon probes it in the background (`watch`), and
a turn that comes before the first probe finished waits for that probe only (at most
`ollama.probe_timeout_s`). When Ollama is unreachable or failing the model is marked down
and not called again until a backoff with jitter passes; callers get `ModelUnavailable` at
once and answer without the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot import metrics
from bot.backoff import Backoff
from bot.config.model_sections import OllamaSettings, OpenAISettings
from bot.model.arguments import (
    MAX_ARGUMENT_DEPTH,
    TOO_DEEP,
    BadNumber,
    ToolArgumentError,
    exceeds_depth,
    valid_arguments,
    valid_text,
)
from bot.model.ollama import (
    DEFAULT_CONTEXT,
    ModelInfo,
    ModelUnavailable,
    OllamaClient,
    OnContent,
    new_backoff,
)
from bot.model.response_formats import ResponseFormats

__all__ = [
    "DEFAULT_CONTEXT",
    "ChatResult",
    "Model",
    "ModelInfo",
    "ModelUnavailable",
    "ToolCall",
    "parse_chat_reply",
    "think_value",
]

_log = logging.getLogger(__name__)

CALL_SHAPE = 'write each call as {"function": {"name": "<tool>", "arguments": {...}}}'
# How often the daemon probes a model that answers, so its health stays current.
PROBE_INTERVAL_S = 60.0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a reply; `problem` says what was wrong with a malformed one."""

    name: str
    arguments: Any
    problem: str = ""


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)


def think_value(model: str, effort: str | None) -> bool | str | None:
    """Translate a reasoning effort to what the model family expects: GPT-OSS takes
    low/medium/high, other thinking models a boolean."""
    if effort is None:
        return None
    if "gpt-oss" in model.lower():
        return "low" if effort == "none" else effort
    return effort != "none"


class ChatClient(Protocol):
    """A model server's client: `OllamaClient`, or `OpenAIClient` for the OpenAI API. Both
    take and give Ollama's shapes and raise `ModelUnavailable` for every failure."""

    host: str

    async def fetch_model_info(self, model: str) -> ModelInfo: ...

    async def fetch_chat(self, request: Mapping[str, Any]) -> Any: ...

    async def stream_chat(self, request: Mapping[str, Any], on_content: OnContent) -> Any: ...

    async def close(self) -> None: ...


def chat_client(
    settings: OllamaSettings | OpenAISettings, formats: ResponseFormats | None = None
) -> ChatClient:
    """The client of the configured backend's server (the openai package only for it);
    `formats` keeps how an OpenAI-compatible server takes a JSON schema."""
    if isinstance(settings, OpenAISettings):
        from bot.model.openai_compat import OpenAIClient

        return OpenAIClient.for_settings(settings, formats)
    return OllamaClient.for_settings(settings)


class Model:
    """The chat model lorebot talks to, with its capabilities and health; `formats` keeps
    how an OpenAI-compatible server takes a JSON schema (in memory only when None)."""

    def __init__(
        self,
        settings: OllamaSettings | OpenAISettings,
        *,
        max_concurrent: int = 2,
        monotonic: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
        formats: ResponseFormats | None = None,
    ) -> None:
        self.settings = settings
        self.client = chat_client(settings, formats)
        told = settings.context_tokens if isinstance(settings, OpenAISettings) else None
        context = told or DEFAULT_CONTEXT
        self.info = ModelInfo(settings.model, context, True, False)
        self.monotonic = monotonic
        self.backoff = backoff or new_backoff()
        self._semaphore = asyncio.Semaphore(max_concurrent)
        self._probe_lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._down_until = 0.0
        self._probed = False
        self._checked_at: float | None = None  # when a probe or call last finished
        self._problem: ModelUnavailable | None = None  # why that one failed

    @property
    def available(self) -> bool:
        """Whether the model may be asked now (it is not waiting out a backoff)."""
        return self.monotonic() >= self._down_until

    @property
    def reachable(self) -> bool:
        """Whether the latest probe or call got an answer from the model."""
        return self._checked_at is not None and self._problem is None

    async def fetch_health(self) -> dict[str, Any]:
        """The model's part of `/healthz`. Before the first probe has finished this waits
        for it (at most the probe timeout), so a fresh start is not reported down."""
        if self._checked_at is None and self.available:
            async with self._probe_lock:
                if self._checked_at is None:
                    await self._probe()
        health: dict[str, Any] = {
            "name": self.info.name,
            "host": self.settings.url,
            "reachable": self.reachable,
        }
        if self._checked_at is not None:
            health["checked_s_ago"] = round(self.monotonic() - self._checked_at, 1)
        if self._problem is not None:
            health["problem"] = str(self._problem)
        return health

    async def probe(self) -> ModelInfo | None:
        """Ask Ollama about the model (context length, tool and thinking support) within
        the probe timeout; None when it did not answer."""
        async with self._probe_lock:
            return await self._probe()

    async def _probe(self) -> ModelInfo | None:
        try:
            info = await self.client.fetch_model_info(self.settings.model)
        except ModelUnavailable as exc:
            self._mark_down(exc)
            return None
        self.info = info
        if not self._probed:
            _log.info(
                "model %s: context %d tokens (%s), tools %s, thinking %s",
                info.name,
                info.context_length,
                info.context_from,
                info.supports_tools,
                info.supports_thinking,
            )
        self._probed = True
        self._mark_up()
        return info

    async def watch(self) -> None:
        """Probe the model now and keep its health current until cancelled: again when a
        backoff has passed while it is down, and every `PROBE_INTERVAL_S` while it is up."""
        while True:
            self._changed.clear()
            if self.available:
                await self.probe()
            delay = PROBE_INTERVAL_S if self.available else self._down_until - self.monotonic()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, delay)):
                    await self._changed.wait()  # a failed call ends the wait early

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        format: Mapping[str, Any] | None = None,
        on_content: OnContent | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        """One chat call; raises `ModelUnavailable` instead of hanging, and at once while the
        model waits out a backoff. With `on_content` the answer is streamed, each piece of
        its content awaited through `on_content` as it arrives; what that raises propagates."""
        await self._ready()
        request = self._request(messages, tools, format, stream=on_content is not None)
        if max_tokens is not None:  # Ollama's name; the OpenAI backend sends `max_tokens`
            request["options"] = {"num_predict": max_tokens}
        async with self._semaphore:  # held until the last line of a stream
            if not self.available:  # it failed while this call waited for its turn
                raise self._refusal()
            started = time.perf_counter()
            try:
                if on_content is None:
                    data = await self.client.fetch_chat(request)
                else:
                    data = await self.client.stream_chat(request, on_content)
            except ModelUnavailable as exc:
                if exc.backs_off:
                    self._mark_down(exc)
                else:  # the server answered: one request or reply was bad, not the model
                    self._mark_up()
                raise
            finally:
                metrics.MODEL_LATENCY.observe(time.perf_counter() - started)
        self._mark_up()
        return parse_chat_reply(data)

    async def _ready(self) -> None:
        """Raise `ModelUnavailable` unless the model may be asked: probed (waiting for a
        probe under way) and not backing off."""
        if self.available and not self._probed:
            async with self._probe_lock:
                if self.available and not self._probed:
                    await self._probe()
        if not self.available or not self._probed:
            raise self._refusal()

    def _refusal(self) -> ModelUnavailable:
        problem = self._problem or ModelUnavailable("the model has not answered yet")
        wait = max(0.0, self._down_until - self.monotonic())
        return ModelUnavailable(
            f"{problem} (asking again in {wait:.0f} s)", kind=problem.kind, fix=problem.fix
        )

    def _request(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        format: Mapping[str, Any] | None,
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.settings.model,
            "messages": list(messages),
            "stream": stream,
        }
        if tools and self.info.supports_tools:
            request["tools"] = list(tools)
        if format:
            request["format"] = dict(format)
        if self.info.supports_thinking:
            think = think_value(self.info.name, self.settings.reasoning_effort)
            if think is not None:
                request["think"] = think
        return request

    def _mark_down(self, exc: ModelUnavailable) -> None:
        delay = self.backoff.next_delay()
        now = self.monotonic()
        self._down_until = now + delay
        self._checked_at, self._problem = now, exc
        self._changed.set()
        # Said once per outage; the repeats are for whoever looks closer.
        log = _log.warning if self.backoff.failures == 1 else _log.info
        log(
            "model %s unavailable: %s; answering from memory, asking again in %.0f s",
            self.settings.model,
            exc,
            delay,
        )

    def _mark_up(self) -> None:
        if self.backoff.failures:
            _log.info("model %s is reachable again", self.settings.model)
        self.backoff.reset()
        self._down_until = 0.0
        self._checked_at, self._problem = self.monotonic(), None

    async def close(self) -> None:
        """Close the connections to Ollama; safe to call twice."""
        await self.client.close()


def parse_chat_reply(data: Any) -> ChatResult:
    """Content, thinking and tool calls of an /api/chat reply, their text made valid (U+FFFD
    for a lone surrogate). Never raises: a malformed tool call, or one whose arguments hold
    a number that cannot be passed on, is kept with its problem, for the model to correct."""
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, dict):
        return ChatResult("")
    content = message.get("content")
    thinking = message.get("thinking")
    return ChatResult(
        valid_text(content) if isinstance(content, str) else "",
        valid_text(thinking) if isinstance(thinking, str) else "",
        _tool_calls(message.get("tool_calls")),
    )


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    if not raw:
        return ()
    if not isinstance(raw, list):
        kind = "a number" if isinstance(raw, BadNumber) else type(raw).__name__
        problem = f"tool_calls must be a list of calls, not {kind}; {CALL_SHAPE}"
        return (ToolCall("", None, problem),)
    return tuple(_tool_call(number, call) for number, call in enumerate(raw, 1))


def _tool_call(number: int, call: Any) -> ToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or not isinstance(name, str) or not name:
        return ToolCall("", None, f"tool call {number} has no function name; {CALL_SHAPE}")
    name = valid_text(name)
    refused = f"the arguments of tool call {number} are refused"
    arguments = function.get("arguments")
    if exceeds_depth(arguments, MAX_ARGUMENT_DEPTH):
        return ToolCall(name, None, f"{refused}: {TOO_DEEP}")
    try:
        return ToolCall(name, valid_arguments(arguments))
    except ToolArgumentError as exc:
        return ToolCall(name, None, f"{refused}: {exc}")
