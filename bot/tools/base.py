"""The tool contract: one entry per model tool, with its schema, its kind and its code.

The tool list the model sees, the capture of write actions, the card count and the
timeout all come from these entries. A tool answers `Ok` or `ToolError` (what the model is
told, and whether the call failed), or, when it needs a person's decision, `Suspend` with
its proposal; the turn waits, and the tool's `resume` gives the model the outcome once the
card is decided.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.approvals.kinds.registry import get_kind
from bot.context.suspended import SuspendedTurn
from bot.context.turn import TurnContext
from bot.model.arguments import ToolArgumentError, coerce_arguments
from memory.stores.proposals import Proposal


class Kind(StrEnum):
    """What running a tool does: read at once, show a card, or act on the world."""

    READ = "read"
    PROPOSAL = "proposal"
    ACTION = "action"


@dataclass(frozen=True, slots=True)
class Ok:
    """A tool's result: `text` is what the model is told."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolError:
    """A call that failed, for a reason the model is told (and may correct the call for)."""

    reason: str

    @property
    def text(self) -> str:
        """What the model is told."""
        return f"error: {self.reason}"


@dataclass(frozen=True, slots=True)
class Suspend:
    """A tool's answer meaning: the turn waits for a person's decision on `proposal`."""

    proposal: Proposal


ToolResult = Ok | ToolError  # what the model is told of a call
ToolOutput = Ok | ToolError | Suspend


@dataclass(frozen=True, slots=True)
class Call:
    """One run of a tool: the turn's context, and its saved state for a card to resume."""

    ctx: TurnContext
    saved_turn: Callable[[], SuspendedTurn]


class Tool(Protocol):
    """One model tool."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> Kind: ...

    @property
    def writes_memory(self) -> bool:
        """Whether it changes memory, so it is not offered where memory is read-only."""

    @property
    def bounds_itself(self) -> bool:
        """Whether its run keeps a time limit of its own (an action's call has its server's
        timeout), so the turn's `tool_timeout_s` must not cut it off mid-run."""

    def spec(self) -> dict[str, Any]:
        """The Ollama tool definition the model sees."""

    def offered(self, ctx: TurnContext) -> bool:
        """Whether this conversation gets the tool."""

    def parse(self, raw: Any) -> dict[str, Any]:
        """The validated arguments; `ToolArgumentError` says what to correct."""

    async def run(self, call: Call, arguments: dict[str, Any]) -> ToolOutput: ...

    async def resume(self, ctx: TurnContext, proposal: Proposal) -> ToolResult:
        """What the model is told once the card it waited for is decided."""


class ToolArgs(BaseModel):
    """Arguments of a built-in tool: strict, frozen, stripped strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


Handler = Callable[[Call, Any], Awaitable[ToolOutput]]
Resumer = Callable[[TurnContext, Proposal], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True, eq=False)
class BuiltinTool:
    """A tool of lorebot's own, its arguments a pydantic model."""

    name: str
    description: str
    kind: Kind
    args: type[ToolArgs]
    handler: Handler
    resumer: Resumer | None = None
    writes_memory: bool = False
    when: Callable[[TurnContext], bool] = field(default=lambda ctx: True)
    bounds_itself: bool = False

    def spec(self) -> dict[str, Any]:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        function = {"name": self.name, "description": self.description, "parameters": schema}
        return {"type": "function", "function": function}

    def offered(self, ctx: TurnContext) -> bool:
        return not (self.writes_memory and ctx.read_only) and self.when(ctx)

    def parse(self, raw: Any) -> dict[str, Any]:
        return self.validate(raw).model_dump()

    def validate(self, raw: Any) -> ToolArgs:
        try:
            return self.args.model_validate(coerce_arguments(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolArgumentError(f"invalid arguments for {self.name}: {problems}") from None

    async def run(self, call: Call, arguments: dict[str, Any]) -> ToolOutput:
        return await self.handler(call, self.args.model_validate(arguments))

    async def resume(self, ctx: TurnContext, proposal: Proposal) -> ToolResult:
        if self.resumer is None:
            return Ok(get_kind(proposal.kind).resume_message(proposal))
        return await self.resumer(ctx, proposal)


class Toolbox:
    """Every tool by name; which of them a turn offers, and their definitions."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: dict[str, dict[str, Any]] = {}
        self._waiting: dict[str, list[asyncio.Future[Tool]]] = {}
        self.add(tools)

    def add(self, tools: Iterable[Tool]) -> None:
        for tool in tools:
            self._tools[tool.name] = tool
            self._specs[tool.name] = tool.spec()  # built once: treat as read-only
            for waiter in self._waiting.pop(tool.name, []):
                if not waiter.done():
                    waiter.set_result(tool)

    def remove(self, names: Iterable[str]) -> None:
        for name in names:
            self._tools.pop(name, None)
            self._specs.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    async def wait_for(self, name: str, timeout_s: float) -> Tool | None:
        """The tool `name`, waiting up to `timeout_s` for it to be added (an MCP server's
        tools arrive when it connects, some time after a restart); None if it is not."""
        tool = self._tools.get(name)
        if tool is not None or timeout_s <= 0:
            return tool
        waiter: asyncio.Future[Tool] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(name, []).append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                return await waiter
        except TimeoutError:
            return None
        finally:
            waiters = self._waiting.get(name, [])
            if waiter in waiters:
                waiters.remove(waiter)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._tools)

    def names_of(self, kind: Kind) -> frozenset[str]:
        return frozenset(n for n, t in self._tools.items() if t.kind is kind)

    def for_turn(self, ctx: TurnContext) -> dict[str, Tool]:
        """The tools this conversation is offered, by name."""
        return {n: t for n, t in sorted(self._tools.items()) if t.offered(ctx)}

    def specs(self, tools: Mapping[str, Tool]) -> tuple[dict[str, Any], ...]:
        # A server may have changed its tools since the turn began: build what is missing.
        return tuple(self._specs.get(name) or tool.spec() for name, tool in tools.items())
