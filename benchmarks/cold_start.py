"""Wall time of one-shot commands from a cold process: `lorebot --help` and `notes search`.

    python benchmarks/cold_start.py [--runs 10] [--notes 1000] [--embed]
    python benchmarks/cold_start.py --database-url postgresql://… --json cold.json

Each command runs `--runs` times as a new process (the installed `lorebot` script, with a
fresh HOME and XDG folders and a database of `--notes` notes); the median and the fastest
run are printed, with the targets (150 ms and 250 ms). `notes search` reads the settings
snapshot its first run kept; a third row times it with the snapshot removed before each
run, as the first search after a settings change is. The imports behind a slow start
show with `python -X importtime -m bot.cli.main notes search …`.

`--embed` sets an embedding model, served by the tests' fake Ollama on 127.0.0.1 (it
answers at once, so what is timed is lorebot's side), and embeds the notes with `notes
reembed` first. `notes search` then embeds its query: each run asks a new question, so
that no cache can answer for the model.

`--database-url` runs the commands on that PostgreSQL database (empty: the notes are
imported into it); `--json` also writes the medians there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import record  # benchmarks/results.py, beside this script

TARGETS_MS = {"--help": 150.0, "notes search": 250.0}


def _lorebot() -> list[str]:
    script = Path(sys.executable).with_name("lorebot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli.main"]


def _environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }


def _fill(home: Path, notes: int, env: dict[str, str]) -> None:
    """A database of `notes` notes in one channel, through `notes import`."""
    lines = [
        f'{{"scope": "channel:slack/C1", "topic": "service-{i}", '
        f'"summary": "service {i} runs on host-{i % 97} behind the staging proxy"}}'
        for i in range(notes)
    ]
    source = home / "notes.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    subprocess.run(
        [*_lorebot(), "notes", "import", str(source)],
        env=env,
        check=True,
        capture_output=True,
    )


def _time(
    argv: list[str],
    env: dict[str, str],
    runs: int,
    *,
    forget: Path | None = None,
    new_query: bool = False,
) -> list[float]:
    """Wall times of `runs` runs; `forget` is a file removed before each; `new_query`
    makes the last word of the query differ in each run."""
    times = []
    for run in range(runs):
        if forget is not None:
            forget.unlink(missing_ok=True)
        command = argv
        if new_query:
            command = [*argv]
            command[3] = f"{argv[3]} run{run}-{time.monotonic_ns()}"
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


@contextmanager
def _fake_ollama() -> Iterator[str]:
    """The tests' fake Ollama, serving embeddings from a thread; yields its URL."""
    from tests.fakes.ollama import FakeOllama

    loop = asyncio.new_event_loop()
    fake = FakeOllama(models=["qwen3:8b", "all-minilm"])
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(fake.start(), loop).result(10)
    try:
        yield fake.url
    finally:
        asyncio.run_coroutine_threadsafe(fake.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


MEDIANS_MS: dict[str, float] = {}  # by row, for `--json`


def _report(name: str, times: list[float], target_ms: float | None) -> None:
    median = statistics.median(times)
    MEDIANS_MS[name] = round(median, 1)
    verdict = "" if target_ms is None else "  ok" if median <= target_ms else "  over target"
    target = "" if target_ms is None else f"  target {target_ms:.0f} ms"
    print(
        f"lorebot {name:<34} median {median:6.1f} ms  fastest {min(times):6.1f} ms{target}{verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command (default 10)")
    parser.add_argument("--notes", type=int, default=1000, help="notes in the database")
    parser.add_argument("--embed", action="store_true", help="with an embedding model set")
    parser.add_argument("--database-url", help="an empty PostgreSQL database to run on")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument(
        "--no-record",
        dest="record",
        action="store_false",
        help="leave RESULTS.md's current table as it is",
    )
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lorebot-cold-"))
    database = {"LOREBOT_DATABASE__URL": args.database_url} if args.database_url else {}
    try:
        if args.embed:
            with _fake_ollama() as url:
                embed = {"LOREBOT_OLLAMA__HOST": url, "LOREBOT_OLLAMA__EMBED_MODEL": "all-minilm"}
                _run(home, args, {**embed, **database})
        else:
            _run(home, args, database)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(MEDIANS_MS, indent=2) + "\n")
    if args.record and not args.embed and not args.database_url:
        record_figures(args.runs)


FIGURES = {
    "--help": ("cold.help", "`lorebot --help`, median of {} cold starts (target: 150 ms)"),
    "notes search": (
        "cold.search",
        "`lorebot notes search`, median of {} cold starts (target: 250 ms)",
    ),
    "notes search, settings loaded in full": (
        "cold.search.full",
        "`lorebot notes search` after a settings change (settings loaded in full)",
    ),
}


def record_figures(runs: int) -> None:
    """The medians of SQLite without an embedding model, into RESULTS.md's current table."""
    for row, (key, what) in FIGURES.items():
        record(key, what.format(runs), f"{MEDIANS_MS[row]:.0f} ms")


def _run(home: Path, args: argparse.Namespace, extra: dict[str, str]) -> None:
    env = {**_environment(home), **extra}
    _fill(home, args.notes, env)
    search = [
        *_lorebot(),
        "notes",
        "search",
        "staging proxy host-7",
        "--scope",
        "channel:slack/C1",
        "-k",
        "10",
    ]
    print(
        f"{args.runs} cold runs each, {args.notes} notes, {os.cpu_count()} CPUs"
        f"{', embedding model set' if args.embed else ''}"
        f"{', on PostgreSQL' if args.database_url else ''}"
    )
    if args.embed:
        subprocess.run([*_lorebot(), "notes", "reembed"], env=env, check=True, capture_output=True)
        _time(search, env, 1)  # the first run fills the OS page cache
        target = TARGETS_MS["notes search"]
        _report("notes search, a new query", _time(search, env, args.runs, new_query=True), target)
        return
    for name, argv in {"--help": [*_lorebot(), "--help"], "notes search": search}.items():
        _time(argv, env, 1)  # the first run fills the OS page cache
        _report(name, _time(argv, env, args.runs), TARGETS_MS[name])
    snapshot = home / ".cache" / "lorebot" / "settings.json"
    _report(
        "notes search, settings loaded in full",
        _time(search, env, args.runs, forget=snapshot),
        None,
    )


if __name__ == "__main__":
    main()
