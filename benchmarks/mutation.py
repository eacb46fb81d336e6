"""Mutation testing of the modules whose promises matter most, one module per run.

    pip install -e '.[mutation]'
    python benchmarks/mutation.py memory/policy/visibility.py
    python benchmarks/mutation.py --list

mutmut 3 copies the packages and tests into `mutants/`, mutates only the module named and
runs, for each mutant, the tests (from the module's test set below) that call the mutated
function. A run starts afresh, so a survivor is retried against today's tests; `--minutes`
stops a long one early, `--resume` goes on with the mutants not tested yet and `--retest`
tries the survivors again after tests were added. It prints
killed, survived and timed-out counts and the diff of every survivor.
The run is niced and uses one worker by default: the build machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The scheduled jobs share one test set.
JOB_TESTS = (
    "tests/bot/jobs/test_jobs.py",
    "tests/bot/jobs/test_job_promises.py",
    "tests/bot/jobs/test_mutants_jobs.py",
)

# Each module with the tests that exercise it: mutmut runs, per mutant, only the tests of
# this set that reached the mutated function, so a narrow set keeps the run short.
MODULES: dict[str, tuple[str, ...]] = {
    "memory/policy/visibility.py": (
        "tests/memory",
        "tests/bot/cli/test_visibility_edges.py",
        "tests/bot/cli/test_cli.py",
    ),
    "bot/daemon/health.py": (
        "tests/bot/daemon/test_operations.py",
        "tests/bot/daemon/test_health_edges.py",
    ),
    "bot/core/dispatcher.py": (
        "tests/bot/core/test_core_e2e.py",
        "tests/bot/core/test_agent_turns.py",
        "tests/bot/approvals/test_approval_hardening.py",
        "tests/bot/core/test_dispatcher_edges.py",
        "tests/adapters/test_card_keys.py",
        "tests/adapters/slack/test_slack.py",
        "tests/adapters/discord/test_discord.py",
    ),
    "memory/sql/proposals.py": (
        "tests/bot/core/test_core_e2e.py",
        "tests/bot/approvals/test_approval_hardening.py",
        "tests/bot/approvals/test_approval_edges.py",
        "tests/bot/cli/test_chat_cli.py",
        "tests/bot/tools/test_tools.py",
        "tests/bot/jobs/test_jobs.py",
        "tests/bot/approvals/test_mutants_approvals.py",
        "tests/bot/approvals/test_mutants_proposals.py",
    ),
    "bot/approvals/service.py": (
        "tests/bot/core/test_core_e2e.py",
        "tests/bot/approvals/test_approval_hardening.py",
        "tests/bot/approvals/test_approval_edges.py",
        "tests/bot/cli/test_chat_cli.py",
        "tests/bot/tools/test_tools.py",
        "tests/bot/actions/test_actions.py",
        "tests/bot/core/test_skills_e2e.py",
        "tests/bot/actions/test_skill_scripts.py",
        "tests/bot/approvals/test_mutants_approvals.py",
    ),
    "bot/daemon/supervision.py": (
        "tests/bot/daemon/test_operations.py",
        "tests/bot/daemon/test_health_edges.py",
    ),
    "bot/jobs/runner.py": JOB_TESTS,
    "bot/jobs/digest.py": (*JOB_TESTS, "tests/bot/actions/test_actions_operations.py"),
    "bot/jobs/maintenance.py": JOB_TESTS,
    "bot/jobs/reflection.py": JOB_TESTS,
    "bot/jobs/patterns.py": JOB_TESTS,
    "memory/policy/redaction.py": ("tests/memory", "tests/bot/core/test_secret_redaction.py"),
    "memory/policy/secret_patterns.py": ("tests/memory", "tests/bot/core/test_secret_redaction.py"),
}

# mutmut's exit codes for a mutant, by the outcome they stand for.
STATUS = {
    1: "killed",
    3: "killed",
    37: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    2: "interrupted",
    None: "not checked",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", nargs="?", help="a path such as memory/policy/visibility.py")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    parser.add_argument(
        "--tests", nargs="+", metavar="PATH", help="test files or folders (default: the table's)"
    )
    parser.add_argument("--max-children", type=int, default=1, help="parallel workers (1)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the counts here")
    parser.add_argument("--no-diffs", action="store_true", help="list survivors without diffs")
    parser.add_argument(
        "--minutes", type=float, help="stop testing mutants after this long (resume later)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the last run's results and test the rest"
    )
    parser.add_argument(
        "--retest", action="store_true", help="test the last run's survivors again (new tests)"
    )
    return parser.parse_args(argv)


def be_nice() -> None:
    """Lower this process (and so every test run) to niceness 10 at least."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if current < 10:
        os.nice(10 - current)


def stop_after(minutes: float) -> None:
    """Interrupt mutmut after `minutes`, as Ctrl-C would: it stops its workers and keeps
    every result so far, so `--resume` goes on from there."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(max(1, round(minutes * 60)))


def fresh_or_resumed(module: str, resume: bool) -> None:
    """Start from an empty `mutants/` unless resuming a run of the same module."""
    marker = ROOT / "mutants" / "module.txt"
    if resume and marker.is_file() and marker.read_text() == module:
        return
    if resume:
        print(f"no earlier run of {module} to resume; starting afresh")
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    marker.parent.mkdir()
    marker.write_text(module)


def run_mutmut(module: str, tests: list[str], max_children: int, names: list[str]) -> int:
    """Run `mutmut run` in this process with the configuration narrowed to one module
    (and to the mutants `names`, if any)."""
    from mutmut.configuration import config

    settings = config()  # the [tool.mutmut] table of pyproject.toml
    settings.only_mutate = [module]
    settings.pytest_add_cli_args_test_selection = tests
    from mutmut.__main__ import cli

    try:
        cli.main(["run", "--max-children", str(max_children), *names], standalone_mode=False)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    except KeyboardInterrupt:
        print("stopped before testing mutants began")
        return 130
    finally:
        signal.alarm(0)
    return 0


def load_results(module: str) -> dict[str, str]:
    """Each mutant's outcome, from the file mutmut keeps beside the mutated copy."""
    meta = json.loads((ROOT / "mutants" / f"{module}.meta").read_text())
    return {name: STATUS.get(code, "suspicious") for name, code in meta["exit_code_by_key"].items()}


def survivors_of(results: dict[str, str]) -> list[str]:
    """The mutants no test noticed."""
    return sorted(n for n, s in results.items() if s in ("survived", "no tests"))


def summary(module: str, results: dict[str, str], seconds: float) -> dict[str, object]:
    """Counts and the score: killed and timed-out mutants over the mutants tested."""
    counts = Counter(results.values())
    total = len(results)
    tested = total - counts["not checked"]
    detected = counts["killed"] + counts["timeout"]
    return {
        "module": module,
        "mutants": total,
        "killed": counts["killed"],
        "survived": counts["survived"],
        "timeout": counts["timeout"],
        "no_tests": counts["no tests"],
        "not_checked": counts["not checked"],
        "other": tested - detected - counts["survived"] - counts["no tests"],
        "score": round(100 * detected / tested, 1) if tested else 0.0,
        "minutes": round(seconds / 60, 1),
        "survivors": survivors_of(results),
    }


def print_report(report: dict[str, object], diffs: bool) -> None:
    """Survivors (with their diffs unless asked not to), then one line of counts."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    survivors = report["survivors"]
    assert isinstance(survivors, list)
    if survivors:
        print(f"\nSurvivors ({len(survivors)}):")
    for name in survivors:
        print(f"\n{name}")
        if diffs:
            print(get_diff_for_mutant(name, path=str(report["module"])))
    print(
        "\n{module}: {mutants} mutants, {killed} killed, {survived} survived, {timeout} timeout, "
        "{no_tests} without tests, {other} other; score {score}% ({minutes} min)".format(**report)
    )
    if report["not_checked"]:
        print(f"{report['not_checked']} mutants not tested yet: run again with --resume.")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list or not args.module:
        for name, selection in MODULES.items():
            print(f"{name:28} {' '.join(selection)}")
        return 0 if args.list else 2
    module = Path(args.module).as_posix()
    tests = args.tests or list(MODULES.get(module, ()))
    if not (ROOT / module).is_file() or not tests:
        print(f"{module}: not a module in the table; give --tests for another module.")
        return 2
    os.chdir(ROOT)
    be_nice()
    fresh_or_resumed(module, args.resume or args.retest)
    names: list[str] = []
    if args.retest and (ROOT / "mutants" / f"{module}.meta").is_file():
        names = survivors_of(load_results(module))
        if not names:
            print("no survivors to test again")
            return 0
    started = time.monotonic()
    if args.minutes:
        stop_after(args.minutes)
    code = run_mutmut(module, tests, args.max_children, names)
    if code != 0:
        print(f"mutmut stopped with exit code {code}; see its output above.")
        return code
    report = summary(module, load_results(module), time.monotonic() - started)
    print_report(report, diffs=not args.no_diffs)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    # The tests ran inside this process; a thread one of them left running (an unclosed
    # SQLite connection's worker) must not keep it from exiting.
    os._exit(status)
