"""Replica faults run: two `lorebot run` processes on one PostgreSQL database answer a
steady stream of Slack mentions while they are killed, stopped and cut off, and every
event is counted: sent, answered, answered twice, told to ask again, lost.

The tests' fake Slack in this process gives each replica its own Socket Mode connection
and spreads events over the open ones; an event not acknowledged within `--ack-s` is
sent again to another connection, up to three times, as Slack retries. The tests' fake
Ollama in a child process answers every chat after `--model-s`, so turns are in flight
when a replica is killed. The faults, in order,
`--gap-s` apart: SIGKILL the replica that leads (started again after `--down-s`, as
systemd would), restart PostgreSQL under both, SIGTERM the other replica (started again
likewise). Reported: the counts, and how long after the last event was sent every event
had its answer.

Run by hand, not in CI (about a minute):

    PYTHONPATH=. python benchmarks/replica_faults.py
    PYTHONPATH=. python benchmarks/replica_faults.py --rate 20 --json faults.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replicas import replica_env  # noqa: E402
from results import record  # noqa: E402
from turns import FakeOllamaProcess  # noqa: E402

from bot.core.replies import ABANDONED_REPLY, BUSY_REPLY, UNAVAILABLE_REPLY  # noqa: E402
from tests.fakes.slack import FakeSlack  # noqa: E402
from tests.support.postgres import PostgresServer, server_programs  # noqa: E402

RETRIES = 3


class Replica:
    """One `lorebot run` process, started again after a fault."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.env = folder, env
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.folder.mkdir(exist_ok=True)
        log = (self.folder / "daemon.log").open("ab")
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            "run",
            cwd=self.folder,
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )

    async def signal(self, signum: int) -> int:
        assert self.process is not None
        self.process.send_signal(signum)
        return await self.process.wait()


async def run(args: argparse.Namespace, url: str, ollama: str, workdir: Path) -> dict[str, Any]:
    slack = FakeSlack()
    await slack.start()
    replicas = []
    for name in ("a", "b"):
        folder = workdir / name
        folder.mkdir()
        env = {**replica_env(folder, url, ollama, slack), "LOREBOT_LOG_LEVEL": "INFO"}
        replicas.append(Replica(folder, env))
    sent: dict[str, float] = {}
    unacknowledged: set[str] = set()  # given up on after every retry, as Slack would
    settled, code = 0.0, None
    deliveries: list[asyncio.Task[None]] = []
    faults: list[tuple[str, float]] = []
    try:
        await replicas[0].start()
        await slack.wait_for(lambda: slack.connections >= 1, within=60)
        await replicas[1].start()
        await slack.wait_for(lambda: slack.connections >= 2, within=60)
        await asyncio.sleep(3)  # the first replica leads

        async def deliver(i: int) -> None:
            body = slack.app_mention(f"<@UBOT> question {i}", channel=f"C{i % args.channels}")
            sent[body["event"]["ts"]] = time.perf_counter()
            for attempt in range(RETRIES + 1):
                sockets = max(1, len(slack._sockets))
                with contextlib.suppress(TimeoutError, IndexError):
                    await slack.push(
                        body,
                        to=(i + attempt) % sockets,
                        within=args.ack_s,
                        retry_attempt=attempt or None,
                        retry_reason="timeout" if attempt else None,
                    )
                    return
            unacknowledged.add(body["event"]["ts"])

        async def send_forever() -> None:
            i = 0
            while True:
                deliveries.append(asyncio.create_task(deliver(i)))
                i += 1
                await asyncio.sleep(1 / args.rate)

        sending = asyncio.create_task(send_forever())
        await asyncio.sleep(args.gap_s)
        faults.append(("SIGKILL of the leader", time.perf_counter()))
        await replicas[0].signal(signal.SIGKILL)
        await asyncio.sleep(args.down_s)
        await replicas[0].start()
        await asyncio.sleep(args.gap_s)
        faults.append(("PostgreSQL restarted", time.perf_counter()))
        await asyncio.to_thread(args.server.restart)
        await asyncio.sleep(args.gap_s)
        faults.append(("SIGTERM of the other", time.perf_counter()))
        code = await replicas[1].signal(signal.SIGTERM)
        await asyncio.sleep(args.down_s)
        await replicas[1].start()
        await asyncio.sleep(args.gap_s)
        sending.cancel()
        await asyncio.gather(*deliveries, return_exceptions=True)
        stopped_sending = time.perf_counter()
        # What waits is answered within a claim's lease and a sweep; then nothing more.
        with contextlib.suppress(TimeoutError):
            await slack.wait_for(lambda: len(_answers(slack)) >= len(sent), within=60)
        settled = time.perf_counter() - stopped_sending
        await asyncio.sleep(3)
    finally:
        for replica in replicas:
            if replica.process is not None and replica.process.returncode is None:
                replica.process.terminate()
                await replica.process.wait()
        await slack.close()
    answers = _answers(slack)
    first = min(sent.values(), default=0.0)

    def said(reply: str) -> int:
        return sum(1 for ts in sent if reply in answers.get(ts, []))

    return {
        "sent": len(sent),
        "answered": sum(1 for ts in sent if ts in answers),
        "answered_twice": sum(1 for ts in sent if len(answers.get(ts, [])) > 1),
        "told_to_ask_again": said(ABANDONED_REPLY),
        "turned_away_busy": said(BUSY_REPLY),
        "told_storage_unavailable": said(UNAVAILABLE_REPLY),
        "lost": sum(1 for ts in sent if ts not in answers),
        "lost_unacknowledged": sum(1 for ts in unacknowledged if ts not in answers),
        "lost_events": sorted(
            (round(sent[ts] - first, 1), ts in unacknowledged) for ts in sent if ts not in answers
        ),
        "sigterm_exit": code,
        "faults": [{"fault": name, "at_s": round(at - first, 1)} for name, at in faults],
        "all_answered_after_s": round(settled, 1),
    }


def _answers(slack: FakeSlack) -> dict[str, list[str]]:
    """Each event's answers, by the event's ts (lorebot answers in its thread)."""
    found: dict[str, list[str]] = {}
    for post in slack.posts:
        if post.thread_ts is not None:
            found.setdefault(post.thread_ts, []).append(post.text)
    return found


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=3.0, help="events sent per second")
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--model-s", type=float, default=0.5, help="the fake model's time")
    parser.add_argument("--ack-s", type=float, default=3.0, help="Slack's wait for an ack")
    parser.add_argument("--gap-s", type=float, default=8.0, help="time between faults")
    parser.add_argument("--down-s", type=float, default=5.0, help="a replica's time down")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--keep", type=Path, help="keep the replicas' logs in this folder")
    args = parser.parse_args(argv)
    programs = server_programs()
    if programs is None:
        raise SystemExit("needs Debian's PostgreSQL: apt-get install postgresql")
    with tempfile.TemporaryDirectory(prefix="lorebot-faults-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(workdir, 0o755)
        args.server = PostgresServer(workdir / "postgres").start(programs)
        ollama = FakeOllamaProcess(delay_s=args.model_s)
        ollama_url = await ollama.start()
        try:
            result = await run(args, args.server.new_database(), ollama_url, workdir)
        finally:
            await ollama.stop()
            args.server.stop()
    print("| sent | answered | of which: ask again, busy, storage down | twice | lost |")
    print("| --- | --- | --- | --- | --- |")
    print(
        f"| {result['sent']} | {result['answered']} | {result['told_to_ask_again']}, "
        f"{result['turned_away_busy']}, {result['told_storage_unavailable']} | "
        f"{result['answered_twice']} | {result['lost']} |"
    )
    for fault in result["faults"]:
        print(f"- {fault['fault']} at {fault['at_s']} s")
    print(
        f"- SIGTERM exit code {result['sigterm_exit']}; every event answered "
        f"{result['all_answered_after_s']} s after the last was sent"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    record_figures(result, args.rate)
    return 0 if result["answered_twice"] == 0 and result["lost"] == 0 else 1


def record_figures(result: dict[str, Any], rate: float) -> None:
    """Every event counted, into the current table of RESULTS.md."""
    what = f"events answered under a kill, a PostgreSQL restart and a SIGTERM, {rate:g}/s"
    value = (
        f"{result['answered']} of {result['sent']}; {result['answered_twice']} twice, "
        f"{result['lost']} lost"
    )
    record(f"faults.{rate:g}", what, value)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
