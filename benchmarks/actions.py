"""Action benchmark: lorebot's own time per MCP action, without the model's or the tool's.

A real `Bot` runs over the recording adapter of the tests, the fake Ollama server (which
asks for one tool call per turn) and a real in-process MCP server (the SDK's `MCPServer`)
whose `restart` tool returns at once. For each of `--actions` actions it times, inside the
running bot:

* validation: the model's arguments checked against the tool's JSON Schema (`parse`);
* card: the call turned into an action row, a proposal and a posted card (`run`);
* decision: the ✅ applied to the proposal (`decide`);
* resume: the approved call carried out and recorded, minus the MCP round trip itself
  (`resume` minus `McpServer.call`).

Run by hand, not in CI:

    . /work/venv/bin/activate
    python benchmarks/actions.py --actions 300
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results import record  # noqa: E402  (benchmarks/results.py, beside this script)

from adapters.base import APPROVE  # noqa: E402
from bot.actions.mcp import McpServer  # noqa: E402
from bot.approvals.service import ApprovalService  # noqa: E402
from bot.tools.actions import McpTool  # noqa: E402
from tests.fakes.mcp_ops import make_server  # noqa: E402
from tests.fakes.ollama import FakeOllama  # noqa: E402
from tests.support.clock import FakeClock  # noqa: E402
from tests.support.harness import start_harness  # noqa: E402

TIMES: dict[str, list[float]] = defaultdict(list)


def timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a method so each call adds its duration to TIMES[name]."""

    if asyncio.iscoroutinefunction(method):

        @functools.wraps(method)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                TIMES[name].append(time.perf_counter() - started)

        return wrapper

    @functools.wraps(method)
    def plain(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            TIMES[name].append(time.perf_counter() - started)

    return plain


def instrument() -> None:
    McpTool.parse = timed("validation", McpTool.parse)  # type: ignore[method-assign]
    McpTool.run = timed("card", McpTool.run)  # type: ignore[method-assign]
    McpTool.resume = timed("resume", McpTool.resume)  # type: ignore[method-assign]
    McpServer.call = timed("tool", McpServer.call)  # type: ignore[method-assign]
    ApprovalService.decide = timed("decision", ApprovalService.decide)  # type: ignore[method-assign]


async def run(actions: int) -> dict[str, Any]:
    instrument()
    server, ran = make_server()
    fake = FakeOllama()
    await fake.start()
    with tempfile.TemporaryDirectory() as folder:
        h = await start_harness(
            Path(folder),
            fake,
            FakeClock(),
            mcp_targets={"ops": server},
            mcp={"servers": [{"name": "ops", "command": "in-process"}]},
        )
        try:
            assert await h.bot.mcp.servers["ops"].wait_connected(10)
            for n in range(actions):
                fake.tool_call("ops__restart", {"service": f"web-{n}", "force": n % 2 == 0})
                await h.say(f"restart web-{n}")
                fake.reply("Restarted.")
                await h.react(h.adapter.cards[-1], APPROVE)
        finally:
            await h.bot.stop()
            await fake.close()
    assert ran["restart"] == actions, ran
    resume_own = [r - t for r, t in zip(TIMES["resume"], TIMES["tool"], strict=True)]
    phases = {
        "validation": TIMES["validation"],
        "card": TIMES["card"],
        "decision": TIMES["decision"],
        "resume (without the tool)": resume_own,
    }
    return {
        "actions": actions,
        "python": platform.python_version(),
        "median_ms": {k: round(statistics.median(v) * 1000, 3) for k, v in phases.items()},
        "p95_ms": {
            k: round(statistics.quantiles(v, n=20)[18] * 1000, 3) for k, v in phases.items()
        },
        "tool_median_ms": round(statistics.median(TIMES["tool"]) * 1000, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=300)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    result = asyncio.run(run(args.actions))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    record_figures(result["median_ms"])
    return 0


FIGURES = {
    "validation": ("actions.validate", "an MCP action: validating its arguments, median"),
    "card": ("actions.card", "an MCP action: posting its card, median"),
    "decision": ("actions.decision", "an MCP action: applying the ✅, median"),
    "resume (without the tool)": (
        "actions.resume",
        "an MCP action: running and recording the call, median (without the tool)",
    ),
}


def record_figures(median_ms: dict[str, float]) -> None:
    """lorebot's own time per step, into the current table of RESULTS.md."""
    for phase, (key, what) in FIGURES.items():
        record(key, what, f"{median_ms[phase]:.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
