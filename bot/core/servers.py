"""What a turn knows of the MCP servers: which are down (told to the model after the stable
prefix) and how long to wait for a tool of one that may be (re)connecting."""

from __future__ import annotations

from typing import Any

from bot.actions.mcp import McpServers
from bot.config.sections import McpSettings
from bot.tools.base import Toolbox


async def servers_unavailable(mcp: McpServers | None) -> list[dict[str, Any]]:
    """Wait for servers still making their first connection attempt (each bounded by
    `mcp.connect_timeout_s`); for those not connected, a line telling the model so.
    It comes after the stable prefix, so the prefix stays the same."""
    if mcp is None:
        return []
    await mcp.wait_first_tries()
    down = [f"`{server.name}` ({server.reason or server.status})" for server in mcp.unavailable()]
    if not down:
        return []
    text = (
        f"The MCP server{'s' if len(down) > 1 else ''} {', '.join(down)} "
        f"{'are' if len(down) > 1 else 'is'} unavailable right now, so some of their "
        "tools may be missing or fail; if the person asks for them, say so."
    )
    return [{"role": "system", "content": text}]


def connect_wait(settings: McpSettings, toolbox: Toolbox, name: str) -> float:
    """How long to wait for a tool that is not there: one of a configured MCP server
    may come when the server (re)connects, as right after a restart. A server whose
    other tools are here is connected already: the tool is gone, so no wait."""
    server, separator, _ = name.partition("__")
    if not separator or server not in {s.name for s in settings.servers}:
        return 0
    if any(tool.startswith(f"{server}__") for tool in toolbox.names):
        return 0
    return settings.connect_timeout_s
