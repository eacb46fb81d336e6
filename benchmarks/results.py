"""The current benchmark figures: one table at the top of `benchmarks/RESULTS.md`, written
by the benchmarks, copied into the README and `docs/benchmarks.md`.

A benchmark ends with `record(key, what, value)` for each figure it measured: that row of
the "Current figures" table gets the value, the command that ran, the date, the commit and
the load average; the history below the table is left as it is. The summaries of
`README.md` and `docs/benchmarks.md` sit between markers that name which rows they show
(`<!-- figures:start recall -->` for those of `benchmarks/recall.py`,
`<!-- figures:start cold.help quality.notes -->` for a row and the rows whose keys begin
`quality.notes.`) and are regenerated from the table, never edited by hand:

    python benchmarks/results.py --write-docs    # after a benchmark has recorded
    python benchmarks/results.py --check         # exit 1 when a summary differs

`tests/test_benchmark_figures.py` runs the check.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
DOCS = (ROOT / "README.md", ROOT / "docs" / "benchmarks.md")
COMMAND = "python benchmarks/results.py --write-docs"

TABLE_START, TABLE_END = "<!-- current:start -->", "<!-- current:end -->"
BLOCK = re.compile(
    r"(<!-- figures:start(?P<select>[^>]*?) -->\n)(?P<body>.*?)(<!-- figures:end -->)", re.DOTALL
)
HEADER = "| key | what | value | command | date | commit | load |"
SCRIPT = re.compile(r"benchmarks/(\w+)\.py")


@dataclass(frozen=True, slots=True)
class Figure:
    """One row of the current table: a figure, how it was measured, and when."""

    key: str
    what: str
    value: str
    command: str
    date: str
    commit: str
    load: str

    @property
    def group(self) -> str:
        """The benchmark that measured it: `recall` for `benchmarks/recall.py`."""
        found = SCRIPT.search(self.command)
        return found.group(1) if found else ""

    def cells(self) -> list[str]:
        command = f"`{self.command}`"
        return [f"`{self.key}`", self.what, self.value, command, self.date, self.commit, self.load]


def read_figures(text: str | None = None) -> list[Figure]:
    """The rows of the current table in RESULTS.md, in order."""
    text = RESULTS.read_text(encoding="utf-8") if text is None else text
    table = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]
    figures = []
    for line in table.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        key, what, value, command, date, commit, load = cells
        figures.append(Figure(key.strip("`"), what, value, command.strip("`"), date, commit, load))
    return figures


def render_table(figures: list[Figure]) -> str:
    rows = [HEADER, "| --- | --- | --- | --- | --- | --- | --- |"]
    rows += ["| " + " | ".join(figure.cells()) + " |" for figure in figures]
    return "\n".join(rows)


def write_figures(figures: list[Figure]) -> None:
    text = RESULTS.read_text(encoding="utf-8")
    head, rest = text.split(TABLE_START, 1)
    tail = rest.split(TABLE_END, 1)[1]
    table = f"{TABLE_START}\n{render_table(figures)}\n{TABLE_END}"
    RESULTS.write_text(head + table + tail, encoding="utf-8")


def _git_commit() -> str:
    try:
        git = ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]
        found = subprocess.run(git, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return found.stdout.strip()


def _this_command() -> str:
    """This process's command line as run from the clone (`PYTHONPATH=.` included, which
    the benchmarks that use the tests' servers need)."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    command = shlex.join(["python", str(shown), *sys.argv[1:]])
    on_path = os.environ.get("PYTHONPATH", "") in (".", str(ROOT))
    return f"PYTHONPATH=. {command}" if on_path else command


def record(key: str, what: str, value: str, command: str | None = None) -> None:
    """Put a figure this run measured into the current table: its row is replaced (or
    added at the end) with `value`, the command (this process's, unless given), today's
    date, the commit checked out and the 1-minute load average on this machine's cores."""
    figure = Figure(
        key=key,
        what=what,
        value=value,
        command=command or _this_command(),
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
        commit=_git_commit(),
        load=f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
    )
    figures = read_figures()
    keys = [f.key for f in figures]
    if key in keys:
        figures[keys.index(key)] = figure
    else:
        figures.append(figure)
    write_figures(figures)
    print(f"recorded {key} = {value} in {RESULTS.name}", file=sys.stderr)


def select(figures: list[Figure], selectors: str) -> list[Figure]:
    """The rows a block names: by benchmark (`recall`: those of `benchmarks/recall.py`), by
    key or by the start of keys (`cold.search`, `quality.notes`); all of them for none."""
    names = selectors.split()
    if not names:
        return figures
    chosen = [f for f in figures if any(_matches(f, name) for name in names)]
    unknown = [name for name in names if not any(_matches(f, name) for f in figures)]
    if unknown:
        raise ValueError(f"no figure in the current table for {', '.join(unknown)}")
    return chosen


def _matches(figure: Figure, name: str) -> bool:
    return name in (figure.group, figure.key) or figure.key.startswith(name + ".")


def render_block(figures: list[Figure], selectors: str) -> str:
    """What stands between a pair of markers: the rows they name, with the command when
    they come from one benchmark, else with the benchmark's name."""
    chosen = select(figures, selectors)
    if len({f.group for f in chosen}) == 1:
        rows = ["| figure | value | command | measured |", "| --- | --- | --- | --- |"]
        rows += [f"| {f.what} | {f.value} | `{f.command}` | {_measured(f)} |" for f in chosen]
    else:
        rows = ["| figure | value | benchmark | measured |", "| --- | --- | --- | --- |"]
        rows += [f"| {f.what} | {f.value} | `{f.group}.py` | {_measured(f)} |" for f in chosen]
    return "\n".join(rows) + "\n"


def _measured(figure: Figure) -> str:
    return f"{figure.date}, {figure.commit}, load {figure.load}"


def regenerate(text: str, figures: list[Figure]) -> str:
    """`text` with every marked block made again from `figures`."""
    return BLOCK.sub(
        lambda m: m.group(1) + render_block(figures, m.group("select")) + m.group(4), text
    )


def stale_blocks(path: Path, figures: list[Figure] | None = None) -> list[str]:
    """The lines of the marked blocks of `path` that the table would not write (for a block
    that lacks a line, the line it should hold)."""
    figures = read_figures() if figures is None else figures
    stale = []
    for m in BLOCK.finditer(path.read_text(encoding="utf-8")):
        shown, wanted = m.group("body").splitlines(), render_block(figures, m.group("select"))
        if m.group("body") != wanted:
            lines = wanted.splitlines()
            stale += [line for line in shown if line not in lines] or [
                line for line in lines if line not in shown
            ]
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write-docs", action="store_true", help="regenerate the summaries")
    action.add_argument("--check", action="store_true", help="exit 1 if a summary is stale")
    args = parser.parse_args()
    figures = read_figures()
    stale = False
    for path in DOCS:
        if args.write_docs:
            text = path.read_text(encoding="utf-8")
            path.write_text(regenerate(text, figures), encoding="utf-8")
        elif found := stale_blocks(path, figures):
            lines = "\n  ".join(found)
            print(f"{path.relative_to(ROOT)}: not as in the table, run {COMMAND}:\n  {lines}")
            stale = True
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
