"""Replicas benchmark: Slack events handled per second by 1 and by 2 `lorebot run` processes
on one PostgreSQL database, side by side in one run.

For each count of replicas: a fresh database on a private PostgreSQL server (Debian's,
started for the run), the tests' fake Ollama in a child process answering every chat at
once, and the tests' fake Slack in this process, which gives each replica its own Socket
Mode connection and sends the events round-robin over them, as Slack spreads an app's
events over its connections. `--events` mentions in `--channels` channels are sent with
at most `--in-flight` unacknowledged at a time; the clock runs from the first event sent
to the last answer posted. Reported: events per second, and per event the time from sent
to answered (p50, p95), which holds lorebot's own work, the fake model's and the fake
Slack's.

Run by hand, not in CI (about a minute):

    PYTHONPATH=. python benchmarks/replicas.py --runs 3     # medians of 3 runs of each
    PYTHONPATH=. python benchmarks/replicas.py --events 600 --channels 60 --json r.json
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

from results import record  # noqa: E402
from turns import FakeOllamaProcess  # noqa: E402

from tests.fakes.slack import FakeSlack  # noqa: E402
from tests.support.postgres import PostgresServer, server_programs  # noqa: E402


def _connected(slack: FakeSlack, count: int) -> bool:
    return slack.connections == count


def replica_env(folder: Path, url: str, ollama: str, slack: FakeSlack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOREBOT_")}
    env.pop("STATE_DIRECTORY", None)
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
        LOREBOT_DATABASE__URL=url,
        LOREBOT_DATABASE__PATH=str(folder / "unused.db"),
        LOREBOT_OLLAMA__HOST=ollama,
        LOREBOT_SLACK__BOT_TOKEN=slack.bot_token,
        LOREBOT_SLACK__APP_TOKEN=slack.app_token,
        LOREBOT_SLACK__API_BASE_URL=slack.api_url,
        LOREBOT_SKILLS__HOME_ROOT=str(folder / "home-skills"),
        LOREBOT_SKILLS__USER_ROOT=str(folder / "user-skills"),
        LOREBOT_LOG_LEVEL="WARNING",
    )
    return env


async def start_replicas(
    processes: list[asyncio.subprocess.Process],
    count: int,
    url: str,
    ollama: str,
    workdir: Path,
    slack: FakeSlack,
) -> None:
    """Start `count` `lorebot run` processes on the database at `url`, each in a folder of
    its own with its log, into `processes`; return once each has its Socket Mode
    connection to `slack`."""
    for n in range(count):
        folder = workdir / f"r{count}-{n}"
        folder.mkdir()
        log = (folder / "daemon.log").open("wb")
        processes.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot.cli.main",
                "run",
                cwd=folder,
                env=replica_env(folder, url, ollama, slack),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )
        )
        await slack.wait_for(functools.partial(_connected, slack, n + 1), within=60)


async def stop_replicas(processes: list[asyncio.subprocess.Process]) -> None:
    """Stop the replicas (SIGTERM) and wait for them to exit."""
    for process in processes:
        if process.returncode is None:
            process.terminate()
    for process in processes:
        await process.wait()


async def run_level(
    replicas: int, url: str, ollama: str, workdir: Path, args: argparse.Namespace
) -> dict[str, Any]:
    slack = FakeSlack()
    await slack.start()
    processes: list[asyncio.subprocess.Process] = []
    try:
        await start_replicas(processes, replicas, url, ollama, workdir, slack)
        sent: dict[str, float] = {}
        answered: dict[str, float] = {}
        gate = asyncio.Semaphore(args.in_flight)

        async def send(i: int) -> None:
            body = slack.app_mention(f"<@UBOT> question {i}", channel=f"C{i % args.channels}")
            async with gate:
                sent[body["event"]["ts"]] = time.perf_counter()
                await slack.push(body, to=i % replicas, within=60)

        async def watch() -> None:
            while len(answered) < args.events:
                now = time.perf_counter()
                for post in slack.posts:
                    if post.thread_ts is not None:
                        answered.setdefault(post.thread_ts, now)
                await asyncio.sleep(0.002)

        started = time.perf_counter()
        watching = asyncio.create_task(watch())
        await asyncio.gather(*(send(i) for i in range(args.events)))
        await asyncio.wait_for(watching, timeout=300)
        elapsed = time.perf_counter() - started
        waits = [(answered[ts] - sent[ts]) * 1000 for ts in sent]
        twice = len(slack.posts) - len(answered)
        return {
            "replicas": replicas,
            "events": args.events,
            "seconds": round(elapsed, 2),
            "events_per_s": round(args.events / elapsed, 1),
            "p50_ms": round(statistics.median(waits), 1),
            "p95_ms": round(statistics.quantiles(waits, n=20)[18], 1),
            "answered_twice": twice,
        }
    finally:
        await stop_replicas(processes)
        await slack.close()


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--channels", type=int, default=30)
    parser.add_argument("--in-flight", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1, help="runs of both levels, alternating")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    programs = server_programs()
    if programs is None:
        raise SystemExit("needs Debian's PostgreSQL: apt-get install postgresql")
    results = []
    with tempfile.TemporaryDirectory(prefix="lorebot-replicas-") as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)
        server = PostgresServer(workdir / "postgres").start(programs)
        ollama = FakeOllamaProcess()
        url = await ollama.start()
        try:
            for number in range(args.runs):
                (folder := workdir / f"run{number}").mkdir()
                for replicas in (1, 2):
                    database = server.new_database()
                    results.append(await run_level(replicas, database, url, folder, args))
        finally:
            await ollama.stop()
            server.stop()
    print("| replicas | events | seconds | events/s | sent → answered p50 ms | p95 ms | twice |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['replicas']} | {r['events']} | {r['seconds']} | {r['events_per_s']} | "
            f"{r['p50_ms']} | {r['p95_ms']} | {r['answered_twice']} |"
        )
    one, two = (median_of(results, level) for level in (1, 2))
    ratio = two["events_per_s"] / one["events_per_s"]
    print(f"\n2 replicas / 1: {ratio:.2f}× the events per second (medians of {args.runs})")
    if args.json:
        args.json.write_text(json.dumps({"levels": results, "ratio": ratio}, indent=2) + "\n")
    if args.events == 300:
        record_figures(one, two, args.runs)
    return 0


def median_of(results: list[dict[str, Any]], replicas: int) -> dict[str, float]:
    """The median events per second and p50 wait of the runs with `replicas` replicas."""
    runs = [r for r in results if r["replicas"] == replicas]
    return {
        "events_per_s": statistics.median(r["events_per_s"] for r in runs),
        "p50_ms": statistics.median(r["p50_ms"] for r in runs),
    }


def record_figures(one: dict[str, float], two: dict[str, float], runs: int) -> None:
    """The medians of the runs, into the current table of RESULTS.md."""
    of = f"median of {runs} runs" if runs > 1 else "one run"
    what = f"Slack events/s, one replica on PostgreSQL ({of})"
    record("replicas.one", what, f"{one['events_per_s']:.1f}")
    what = f"Slack events/s, two replicas on the same 2 cores ({of})"
    ratio = two["events_per_s"] / one["events_per_s"]
    record("replicas.two", what, f"{two['events_per_s']:.1f} ({ratio:.2f}× one)")
    what = f"sent → answered p50 with two replicas ({of})"
    record("replicas.two.wait", what, f"{two['p50_ms']:,.0f} ms")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
