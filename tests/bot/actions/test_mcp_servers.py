"""The connection to one MCP server: it stays up across many keep-alive rounds."""

from __future__ import annotations

import asyncio

from bot.actions.mcp import ASK_EVERY, McpServer
from bot.config.sections import McpServerSettings
from tests.fakes.mcp_ops import make_server


async def test_a_healthy_server_stays_connected_across_keep_alive_rounds() -> None:
    target, _ = make_server()
    settings = McpServerSettings(name="ops", command="in-process")
    server = McpServer(settings, connect_timeout_s=5, target=target, keepalive_s=0.01)
    task = asyncio.ensure_future(server.run())
    try:
        assert await server.wait_connected(5)
        await asyncio.sleep(0.01 * ASK_EVERY * 5)  # several fresh listings
        assert server.connected and server.connections == 1 and server.status == "connected"
        result = await server.call("status", {"service": "web"}, 5)
        assert result.outcome == "ok" and "unhealthy" in result.text
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
