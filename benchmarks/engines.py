"""SQLite and PostgreSQL side by side, in one run on one machine: importing notes (one
change set per import), searching them by words, a turn's own time and a command's start.

Each engine gets the same notes: `--notes` drafts over 50 channel scopes, each a summary
and a body of words drawn from a fixed vocabulary (seeded, so every run sees the same
text). An import is `NoteStore.import_drafts` into an empty database, timed `--runs` times
(a new database each time); the median is reported as notes per second. Searches are
`NoteStore.search` of `--queries` three-word questions in one channel's view (its notes,
the team's), words only, k=5, after one warm-up pass; p50, p95 and p99 per search.

Then, unless `--no-bot`, the whole bot on each engine, through the benchmarks that measure
it on SQLite, run as child processes with `--database-url` for PostgreSQL: a turn's own
time (`turns.py`: `--notes` notes, one conversation at a time, the model's time taken out)
and a cold `lorebot notes search` (`cold_start.py`, 1,000 notes).

PostgreSQL is a private server of Debian's PostgreSQL started for the run (fsync off, as
in the tests), on 127.0.0.1: the figures include the round trips of a local socket.

    PYTHONPATH=. python benchmarks/engines.py                   # 20k notes, 3 runs
    PYTHONPATH=. python benchmarks/engines.py --notes 100000 --runs 1
    PYTHONPATH=. python benchmarks/engines.py --notes 50000 --json engines.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from results import record

from memory import NoteDraft, Scope, Viewer, visibility_for
from memory.stores.stores import StoreOptions
from tests.support.engines import open_engine
from tests.support.postgres import PostgresServer, server_programs

VOCABULARY = [f"w{n}" for n in range(3000)] + [
    "staging",
    "deploy",
    "database",
    "gateway",
    "runbook",
    "oncall",
    "backup",
    "certificate",
    "rotation",
    "latency",
    "incident",
    "rollback",
    "migration",
    "cluster",
    "replica",
]
CHANNELS = [Scope.parse(f"channel:slack/C{n}") for n in range(50)]
TEAM = Scope.parse("team:slack/T1")


def drafts(count: int, seed: int = 7) -> list[NoteDraft]:
    rng = random.Random(seed)
    found = []
    for n in range(count):
        words = rng.choices(VOCABULARY, k=30)
        found.append(
            NoteDraft(
                CHANNELS[n % len(CHANNELS)],
                f"note-{n}",
                " ".join(words[:10]),
                body=" ".join(words[10:]),
            )
        )
    return found


def questions(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(VOCABULARY, k=3)) for _ in range(count)]


async def import_rate(engine: str, where: Any, notes: Sequence[NoteDraft]) -> float:
    stores = await open_engine(engine, where, StoreOptions())
    try:
        start = time.perf_counter()
        result = await stores.notes.import_drafts(notes, actor="bench")
        elapsed = time.perf_counter() - start
        assert result.created == len(notes) and result.change_id is not None
    finally:
        await stores.close()
    return len(notes) / elapsed


async def search_times(engine: str, where: Any, asked: Sequence[str]) -> list[float]:
    stores = await open_engine(engine, where, StoreOptions())
    view = visibility_for(Viewer(Scope.parse("user:slack/U1"), CHANNELS[3], TEAM))
    try:
        for text in asked[:20]:  # warm-up: caches, the planner's statistics
            await stores.notes.search(text, view, k=5, bump=False)
        times = []
        for text in asked:
            start = time.perf_counter()
            await stores.notes.search(text, view, k=5, bump=False)
            times.append((time.perf_counter() - start) * 1000)
    finally:
        await stores.close()
    return times


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def p99(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=100)[-1]


BENCHMARKS = Path(__file__).resolve().parent


def bot_figures(args: argparse.Namespace, workdir: Path, urls: Sequence[str]) -> dict[str, float]:
    """A turn's own time and a cold `notes search` on one engine, from `turns.py` and
    `cold_start.py` in child processes; on PostgreSQL `urls` holds an empty database for
    each, on SQLite nothing."""
    turns, cold = workdir / "turns.json", workdir / "cold.json"
    on_turns = ["--database-url", urls[0]] if urls else []
    on_cold = ["--database-url", urls[1]] if urls else []
    turns_argv = [
        "--notes",
        str(args.notes),
        "--levels",
        "1",
        "--turns",
        "200",
        "--latency-turns",
        "300",
        "--wide",
        "0",
        "--no-record",
    ]
    # turns.py's exit status says whether its own targets hold, not whether it ran.
    subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "turns.py"),
            *turns_argv,
            "--json",
            str(turns),
            *on_turns,
        ],
        check=False,
        stdout=subprocess.DEVNULL,
    )
    cold_argv = ["--json", str(cold), "--no-record", *on_cold]
    subprocess.run(
        [sys.executable, str(BENCHMARKS / "cold_start.py"), *cold_argv],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    latency = json.loads(turns.read_text())["latency"]
    return {
        "turn own p50 ms": latency["own_p50_ms"],
        "turn own p99 ms": latency["own_p99_ms"],
        "cold notes search ms": json.loads(cold.read_text())["notes search"],
    }


async def run(args: argparse.Namespace, workdir: Path, server: PostgresServer) -> dict[str, Any]:
    notes, asked = drafts(args.notes), questions(args.queries)
    report: dict[str, Any] = {"notes": args.notes, "queries": args.queries, "runs": args.runs}
    places = {
        "sqlite": lambda n: workdir / f"run-{n}.db",
        "postgresql": lambda n: server.new_database(),
    }
    for engine, place in places.items():
        rates = [await import_rate(engine, place(n), notes) for n in range(args.runs)]
        searched = place(args.runs)
        await import_rate(engine, searched, notes)
        times = await search_times(engine, searched, asked)
        report[engine] = {
            "import notes/s (median)": statistics.median(rates),
            "import runs": rates,
            "search p50 ms": statistics.median(times),
            "search p95 ms": p95(times),
            "search p99 ms": p99(times),
        }
        if args.bot:
            urls = [] if engine == "sqlite" else [server.new_database(), server.new_database()]
            report[engine] |= bot_figures(args, workdir, urls)
    return report


def print_report(report: dict[str, Any]) -> None:
    lite, pg = report["sqlite"], report["postgresql"]
    counts = f"{report['notes']:,} notes, {report['queries']} searches"
    print(f"\n{counts}, {report['runs']} imports each\n")
    print("| | SQLite | PostgreSQL | PostgreSQL / SQLite |")
    print("| --- | --- | --- | --- |")
    rows = [
        ("import notes/s (median)", "{:,.0f}"),
        ("search p50 ms", "{:.2f}"),
        ("search p95 ms", "{:.2f}"),
        ("search p99 ms", "{:.2f}"),
        ("turn own p50 ms", "{:.2f}"),
        ("turn own p99 ms", "{:.2f}"),
        ("cold notes search ms", "{:.0f}"),
    ]
    for key, fmt in rows:
        if key not in lite:
            continue
        ratio = pg[key] / lite[key]
        print(f"| {key} | {fmt.format(lite[key])} | {fmt.format(pg[key])} | {ratio:.2f}× |")


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--no-bot",
        dest="bot",
        action="store_false",
        help="only the store: no turns, no command start",
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    programs = server_programs()
    if programs is None:
        print(
            "this benchmark needs Debian's PostgreSQL: apt-get install postgresql", file=sys.stderr
        )
        return 1
    with tempfile.TemporaryDirectory(prefix="lorebot-engines-") as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)
        server = PostgresServer(workdir / "postgres").start(programs)
        try:
            report = await run(args, workdir, server)
        finally:
            server.stop()
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.notes == 100_000 and args.bot:
        record_figures(report)
    return 0


FIGURES = {
    "engines.import": (
        "import notes/s (median)",
        "{:,.0f}",
        "",
        "100k notes imported, notes/s: SQLite / PostgreSQL",
    ),
    "engines.search": (
        "search p50 ms",
        "{:.2f}",
        " ms",
        "word search p50 at 100k notes: SQLite / PostgreSQL",
    ),
    "engines.turn": (
        "turn own p50 ms",
        "{:.1f}",
        " ms",
        "a turn's own time p50 at 100k notes: SQLite / PostgreSQL",
    ),
    "engines.cold": (
        "cold notes search ms",
        "{:.0f}",
        " ms",
        "a cold `notes search`: SQLite / PostgreSQL",
    ),
}


def record_figures(report: dict[str, Any]) -> None:
    """Both engines' figures at 100k notes, with their ratio, into RESULTS.md."""
    lite, pg = report["sqlite"], report["postgresql"]
    for key, (row, fmt, unit, what) in FIGURES.items():
        both = f"{fmt.format(lite[row])} / {fmt.format(pg[row])}{unit}"
        record(key, what, f"{both} ({pg[row] / lite[row]:.2f}×)")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
