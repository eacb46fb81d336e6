"""MCP servers as an operator configures them, for the tests that run one as a subprocess."""

from __future__ import annotations

import sys
from typing import Any

from tests.support.paths import ROOT


def stdio_server(**extra: Any) -> dict[str, Any]:
    """The fake ops server as a subprocess, the way an operator configures one."""
    return {
        "name": "ops",
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_ops"],
        "cwd": str(ROOT),
        "trust": "trusted",
        **extra,
    }
