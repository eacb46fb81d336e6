"""The local model through Ollama: capability probe, chat with timeouts, offline backoff.

When Ollama is unreachable the model is marked down and not called again until a backoff
delay passes; callers get `ModelUnavailable` at once and answer without the model.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import ollama

from bot import metrics
from bot.config import OllamaSettings
from bot.errors import LorebotError
from bot.tool_args import MAX_ARGUMENT_DEPTH, TOO_DEEP, exceeds_depth

_log = logging.getLogger(__name__)

BACKOFF_START_S = 2.0
CALL_SHAPE = 'write each call as {"function": {"name": "<tool>", "arguments": {...}}}'
# Everything a chat call can raise that means "no usable answer"; mapped in `_unavailable`.
CHAT_FAILURES = (
    ollama.ResponseError,
    TimeoutError,
    ConnectionError,
    httpx.HTTPError,
    ValueError,
    RecursionError,
)
BACKOFF_MAX_S = 60.0
DEFAULT_CONTEXT = 8192


class ModelUnavailable(LorebotError):
    """The model cannot answer now (unreachable, timed out, or missing)."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    context_length: int
    supports_tools: bool
    supports_thinking: bool


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


class Model:
    """The chat model lorebot talks to, with its capabilities and health."""

    def __init__(
        self,
        settings: OllamaSettings,
        *,
        max_concurrent: int = 2,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.client = ollama.AsyncClient(host=settings.host)
        self.info = ModelInfo(settings.model, DEFAULT_CONTEXT, True, False)
        self._semaphore = asyncio.Semaphore(max_concurrent)
        self._monotonic = monotonic
        self._down_until = 0.0
        self._backoff = 0.0
        self._probed = False

    @property
    def available(self) -> bool:
        return self._monotonic() >= self._down_until

    async def probe(self) -> ModelInfo | None:
        """Ask Ollama about the model: context length, tool and thinking support."""
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                shown = await self.client.show(self.settings.model)
        except Exception as exc:
            self._mark_down(exc)
            return None
        capabilities = set(shown.capabilities or [])
        context = next(
            (int(v) for k, v in (shown.modelinfo or {}).items() if k.endswith(".context_length")),
            DEFAULT_CONTEXT,
        )
        self.info = ModelInfo(
            self.settings.model,
            context,
            "tools" in capabilities or not capabilities,
            "thinking" in capabilities,
        )
        self._probed = True
        self._mark_up()
        _log.info(
            "model %s: context %d tokens, tools %s, thinking %s",
            self.info.name, context, self.info.supports_tools, self.info.supports_thinking,
        )  # fmt: skip
        return self.info

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        format: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """One non-streaming chat call; raises `ModelUnavailable` instead of hanging."""
        if not self.available:
            raise ModelUnavailable("the model is unreachable (retrying later)")
        if not self._probed:
            await self.probe()
            if not self.available:
                raise ModelUnavailable("the model is unreachable")
        think = None
        if self.info.supports_thinking:
            think = think_value(self.info.name, self.settings.reasoning_effort)
        request = {
            "model": self.settings.model,
            "messages": list(messages),
            "stream": False,
        }
        if tools and self.info.supports_tools:
            request["tools"] = list(tools)
        if format:
            request["format"] = dict(format)
        if think is not None:
            request["think"] = think
        async with self._semaphore:
            started = time.perf_counter()
            try:
                data = await self._post_chat(request)
            finally:
                metrics.MODEL_LATENCY.observe(time.perf_counter() - started)
        self._mark_up()
        return parse_chat_reply(data)

    async def _post_chat(self, request: Mapping[str, Any]) -> Any:
        """The decoded body of one /api/chat call; each way it can fail is mapped here."""
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                # The client's own request path (errors mapped as ollama maps them), but
                # the reply is parsed here: ollama's ChatResponse rejects tool-call
                # arguments sent as a JSON string, and the whole reply would be lost.
                response = await self.client._request_raw(  # type: ignore[no-untyped-call]
                    "POST", "/api/chat", json=request
                )
            return response.json()
        except CHAT_FAILURES as exc:
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: BaseException) -> ModelUnavailable:
        """What a failed chat call tells the turn; the model is marked down when it is
        unreachable or failing, not when one reply was unreadable."""
        if isinstance(exc, ollama.ResponseError):
            if exc.status_code == 404:
                return ModelUnavailable(
                    f"model {self.settings.model} is not installed: "
                    f"run `ollama pull {self.settings.model}`"
                )
            if exc.status_code >= 500:
                self._mark_down(exc)
            return ModelUnavailable(f"the model failed: {exc.error}")
        if isinstance(exc, TimeoutError | httpx.TransportError | ConnectionError):
            self._mark_down(exc)
            return ModelUnavailable("the model is unreachable or timed out")
        if isinstance(exc, RecursionError):
            return ModelUnavailable("the model sent a reply nested too deeply to read")
        # Not JSON, not UTF-8, a body httpx cannot decode, or one pydantic rejects.
        return ModelUnavailable(f"the model sent an unreadable reply ({type(exc).__name__})")

    def _mark_down(self, exc: BaseException) -> None:
        self._backoff = min(BACKOFF_MAX_S, self._backoff * 2 or BACKOFF_START_S)
        self._down_until = self._monotonic() + self._backoff
        _log.warning(
            "model %s at %s unavailable (%s: %s); retrying in %.0f s",
            self.settings.model, self.settings.host, type(exc).__name__, exc, self._backoff,
        )  # fmt: skip

    def _mark_up(self) -> None:
        if self._backoff:
            _log.info("model %s is reachable again", self.settings.model)
        self._backoff = 0.0
        self._down_until = 0.0

    async def close(self) -> None:
        await self.client.close()  # type: ignore[no-untyped-call]


def parse_chat_reply(data: Any) -> ChatResult:
    """Content, thinking and tool calls of an /api/chat reply. Never raises: a malformed
    tool call is kept with its problem, for the model to correct."""
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, dict):
        return ChatResult("")
    content = message.get("content")
    thinking = message.get("thinking")
    return ChatResult(
        content if isinstance(content, str) else "",
        thinking if isinstance(thinking, str) else "",
        _tool_calls(message.get("tool_calls")),
    )


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    if not raw:
        return ()
    if not isinstance(raw, list):
        problem = f"tool_calls must be a list of calls, not {type(raw).__name__}; {CALL_SHAPE}"
        return (ToolCall("", None, problem),)
    return tuple(_tool_call(number, call) for number, call in enumerate(raw, 1))


def _tool_call(number: int, call: Any) -> ToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or not isinstance(name, str) or not name:
        return ToolCall("", None, f"tool call {number} has no function name; {CALL_SHAPE}")
    arguments = function.get("arguments")
    if exceeds_depth(arguments, MAX_ARGUMENT_DEPTH):
        return ToolCall(name, None, f"the arguments of tool call {number} are refused: {TOO_DEEP}")
    return ToolCall(name, arguments)
