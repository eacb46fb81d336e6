"""Clicks benchmark: the time from a click on a card's Approve button to the card's edit,
with 1 and with 2 `lorebot run` processes on one PostgreSQL database, in one run.

For each count of replicas: a fresh database on a private PostgreSQL server (Debian's,
started for the run), the tests' fake Ollama in a child process, and the tests' fake Slack
in this process, which gives each replica its own Socket Mode connection. `--clicks`
people each ask for a note in a channel of their own (`remember that …`), which posts as
many cards; then each card is approved by its requester's click, one click at a time,
sent round-robin over the replicas' connections (with two, half the clicks reach the
replica that did not post the card). Reported per click: the time from sending the
`block_actions` payload to the card's edit reaching the fake Slack (p50, p95), which holds
the acknowledgement, the check, the inbox, the decision's transaction and the edit.

Run by hand, not in CI (about a minute):

    PYTHONPATH=. python benchmarks/clicks.py              # 100 clicks at each level
    PYTHONPATH=. python benchmarks/clicks.py --clicks 300 --json c.json
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replicas import start_replicas, stop_replicas  # noqa: E402
from results import record  # noqa: E402
from turns import FakeOllamaProcess  # noqa: E402

from tests.fakes.slack import FakeSlack, Post  # noqa: E402
from tests.support.postgres import PostgresServer, server_programs  # noqa: E402


def _cards(slack: FakeSlack, count: int) -> bool:
    return sum(1 for post in slack.posts if post.buttons and len(post.reactions) == 2) >= count


def _edited(post: Post) -> bool:
    return bool(post.edits)


async def run_level(
    replicas: int, url: str, ollama: str, workdir: Path, args: argparse.Namespace
) -> dict[str, Any]:
    slack = FakeSlack()
    slack.users.update({f"UP{n}": f"person{n}" for n in range(args.clicks)})
    await slack.start()
    processes: list[asyncio.subprocess.Process] = []
    try:
        await start_replicas(processes, replicas, url, ollama, workdir, slack)
        for i in range(args.clicks):
            body = slack.app_mention(
                f"<@UBOT> remember that service {i} runs on host-{i}",
                user=f"UP{i}",
                channel=f"C{i}",
            )
            await slack.push(body, to=i % replicas, within=60)
        await slack.wait_for(functools.partial(_cards, slack, args.clicks), within=300)
        cards = [post for post in slack.posts if post.buttons]
        waits = []
        for i in range(args.clicks):
            card = cards[i]
            person = f"UP{int(card.channel.removeprefix('C'))}"
            click = slack.block_actions(card, "Approve", user=person)
            started = time.perf_counter()
            await slack.push(click, envelope_type="interactive", to=(i + 1) % replicas)
            await slack.wait_for(functools.partial(_edited, card), within=60)
            waits.append((time.perf_counter() - started) * 1000)
        approved = sum(1 for card in cards if card.current.startswith("✅"))
        return {
            "replicas": replicas,
            "clicks": args.clicks,
            "p50_ms": round(statistics.median(waits), 1),
            "p95_ms": round(statistics.quantiles(waits, n=20)[18], 1),
            "approved": approved,
        }
    finally:
        await stop_replicas(processes)
        await slack.close()


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=100)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    programs = server_programs()
    if programs is None:
        raise SystemExit("needs Debian's PostgreSQL: apt-get install postgresql")
    results = []
    with tempfile.TemporaryDirectory(prefix="lorebot-clicks-") as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)
        server = PostgresServer(workdir / "postgres").start(programs)
        ollama = FakeOllamaProcess()
        url = await ollama.start()
        try:
            for replicas in (1, 2):
                database = server.new_database()
                results.append(await run_level(replicas, database, url, workdir, args))
        finally:
            await ollama.stop()
            server.stop()
    print("| replicas | clicks | click → card edited p50 ms | p95 ms | approved |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['replicas']} | {r['clicks']} | {r['p50_ms']} | {r['p95_ms']} | {r['approved']} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"levels": results}, indent=2) + "\n")
    if args.clicks == 100:
        one, two = results
        record("clicks.one", "click → card edited p50, one replica", f"{one['p50_ms']:.1f} ms")
        what = "click → card edited p50, two replicas (half at the other one)"
        record("clicks.two", what, f"{two['p50_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
