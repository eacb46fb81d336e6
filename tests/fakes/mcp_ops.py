"""A real MCP server (the official SDK's `MCPServer`) playing an operator's ops tools.

Used in-process by most tests, and as a stdio subprocess (`python -m tests.fakes.mcp_ops`)
where the transport itself is under test. It counts the calls it ran, so a test can say
exactly what happened on the server's side.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

LEAKED_TOKEN = "xoxb-123456789012-123456789012-abcdefghijklmnopqrstuvwx"


def make_server() -> tuple[MCPServer, Counter[str]]:
    """A fresh server and the count of runs per tool."""
    server = MCPServer("ops")
    ran: Counter[str] = Counter()

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def status(service: str) -> str:
        """Tell whether a service is healthy."""
        ran["status"] += 1
        return f"{service}: unhealthy (3 of 5 checks failing)"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def restart(service: str, force: bool = False) -> str:
        """Restart a service."""
        ran["restart"] += 1
        return f"restarted {service}" + (" (forced)" if force else "")

    @server.tool()
    def scale(service: str, replicas: int) -> str:
        """Scale a service to a number of replicas."""
        ran["scale"] += 1
        return f"{service} now has {replicas} replicas"

    @server.tool()
    def fail(service: str) -> str:
        """A tool that fails."""
        ran["fail"] += 1
        raise ToolError(f"no such service: {service}")

    @server.tool()
    def disk() -> str:
        """Reports its failure in plain text, as some servers do."""
        ran["disk"] += 1
        return "Error: disk full on /var"

    @server.tool(annotations=ToolAnnotations(idempotent_hint=False))
    async def slow(seconds: float) -> str:
        """Takes its time."""
        ran["slow"] += 1
        await asyncio.sleep(seconds)
        return "finally done"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def config() -> str:
        """Shows the service configuration."""
        ran["config"] += 1
        return f"listen=0.0.0.0:80\nslack_token={LEAKED_TOKEN}\n"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def environment() -> str:
        """Names the environment variables the server was started with."""
        return " ".join(sorted(os.environ))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def secret_env(name: str) -> str:
        """Echoes one of the server's environment variables, as a careless tool might."""
        ran["secret_env"] += 1
        return f"{name} is {os.environ.get(name, '(not set)')}"

    @server.tool()
    def echo(text: str) -> str:
        """Says it got the text; counts each exact text it was sent."""
        ran[f"echo:{text}"] += 1
        return "echoed"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    async def slow_status(seconds: float) -> str:
        """A read-only, idempotent status check that takes its time."""
        ran["slow_status"] += 1
        await asyncio.sleep(seconds)
        return "all healthy"

    @server.tool(structured_output=False)
    def report() -> str:
        """Runs, then answers against its own output schema (set below)."""
        ran["report"] += 1
        return "report written"

    # The listing promises structured output that the tool never sends: the client
    # refuses the result after the tool ran.
    server._tool_manager.get_tool("report").output_schema = {  # type: ignore[union-attr]
        "type": "object",
        "properties": {"pages": {"type": "integer"}},
        "required": ["pages"],
    }
    return server, ran


if __name__ == "__main__":
    ops = make_server()[0]
    for name in os.environ.get("OPS_WITHOUT", "").split():  # an upgrade dropped these tools
        ops.remove_tool(name)
    if forged := os.environ.get("OPS_FORGED_NAME"):  # a name that would forge card lines
        ops.add_tool(lambda: "dropped", name=forged, description="Looks harmless.")
    ops.run()
