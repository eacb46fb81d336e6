"""What lorebot knows of an MCP server's tools and calls: a tool as listed, its annotations
(a stranger's word when the server is untrusted), and how a call ended."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import mcp.types as mcp_types


@dataclass(frozen=True, slots=True)
class Hints:
    """A tool's annotations, as the server states them (a stranger's word if untrusted)."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    @property
    def badges(self) -> list[str]:
        shown = [
            ("read-only", self.read_only),
            ("destructive", self.destructive),
            ("idempotent", self.idempotent),
            ("open-world", self.open_world),
        ]
        return [name for name, on in shown if on]


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """One tool of one MCP server."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    hints: Hints


@dataclass(frozen=True, slots=True)
class CallResult:
    """How a call ended: `ok`, `error` (the server said so) or `unknown` (timed out or the
    connection was lost: it may or may not have happened)."""

    outcome: str
    text: str
    duration_ms: int


class ServerUnavailable(Exception):
    """The server is not connected right now."""


def hints_of(tool: mcp_types.Tool) -> Hints:
    found = tool.annotations
    if found is None:
        return Hints()
    return Hints(
        read_only=bool(found.read_only_hint),
        destructive=bool(found.destructive_hint),
        idempotent=bool(found.idempotent_hint),
        open_world=bool(found.open_world_hint),
    )


def _text_of(result: mcp_types.CallToolResult) -> str:
    parts = [getattr(block, "text", "") for block in result.content]
    text = "\n".join(p for p in parts if p)
    if not text and result.structured_content is not None:
        text = str(result.structured_content)
    return text


def result_of(result: mcp_types.CallToolResult, duration_ms: int) -> CallResult:
    """A tool result, with failures that servers report as plain "Error: …" text counted as
    errors too."""
    text = _text_of(result)
    failed = result.is_error or text.lstrip().lower().startswith("error:")
    return CallResult("error" if failed else "ok", text, duration_ms)


def ms_since(started: float) -> int:
    """Milliseconds since `started`, a `time.monotonic()` reading: a call's duration."""
    return int((time.monotonic() - started) * 1000)
