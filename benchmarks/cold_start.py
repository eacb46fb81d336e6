"""Wall time of one-shot commands from a cold process: `lorebot --help` and `notes search`.

    python benchmarks/cold_start.py [--runs 10] [--notes 1000]

Each command runs `--runs` times as a new process (the installed `lorebot` script, with a
fresh HOME and XDG folders and a database of `--notes` notes); the median and the fastest
run are printed, with the targets (150 ms and 250 ms). `notes search` reads the settings
snapshot its first run kept; a third row times it with the snapshot removed before each
run, as the first search after a settings change is. The imports behind a slow start
show with `python -X importtime -m bot.cli notes search …`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS_MS = {"--help": 150.0, "notes search": 250.0}


def _lorebot() -> list[str]:
    script = Path(sys.executable).with_name("lorebot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli"]


def _environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }


def _fill(home: Path, notes: int) -> None:
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
        env=_environment(home),
        check=True,
        capture_output=True,
    )


def _time(
    argv: list[str], env: dict[str, str], runs: int, *, forget: Path | None = None
) -> list[float]:
    """Wall times of `runs` runs; `forget` is a file removed before each."""
    times = []
    for _ in range(runs):
        if forget is not None:
            forget.unlink(missing_ok=True)
        started = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command (default 10)")
    parser.add_argument("--notes", type=int, default=1000, help="notes in the database")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lorebot-cold-"))
    try:
        _fill(home, args.notes)
        env = _environment(home)
        commands = {
            "--help": [*_lorebot(), "--help"],
            "notes search": [
                *_lorebot(),
                "notes",
                "search",
                "staging proxy host-7",
                "--scope",
                "channel:slack/C1",
                "-k",
                "10",
            ],
        }
        snapshot = home / ".cache" / "lorebot" / "settings.json"
        print(f"{args.runs} cold runs each, {args.notes} notes, {os.cpu_count()} CPUs")
        for name, argv in commands.items():
            _time(argv, env, 1)  # the first run fills the OS page cache
            times = _time(argv, env, args.runs)
            median = statistics.median(times)
            verdict = "ok" if median <= TARGETS_MS[name] else "over target"
            print(
                f"lorebot {name:<13} median {median:6.1f} ms  fastest {min(times):6.1f} ms  "
                f"target {TARGETS_MS[name]:.0f} ms  {verdict}"
            )
        times = _time(commands["notes search"], env, args.runs, forget=snapshot)
        print(
            f"lorebot notes search, settings loaded in full  median "
            f"{statistics.median(times):6.1f} ms  fastest {min(times):6.1f} ms"
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
