"""The `lorebot` command line: parsing, logging, and the one place errors become exit codes."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from bot import __version__
from bot.cli import actions as actions_cli
from bot.cli import backup as backup_cli
from bot.cli import chat as chat_cli
from bot.cli import config as config_cli
from bot.cli import console as console_cli
from bot.cli import db as db_cli
from bot.cli import doctor as doctor_cli
from bot.cli import history as history_cli
from bot.cli import jobs as jobs_cli
from bot.cli import notes as notes_cli
from bot.cli import proposals as proposals_cli
from bot.cli import run as run_cli
from bot.cli import skills as skills_cli
from bot.errors import ConfigError, UserError, user_message

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.config.snapshot import SettingsSnapshot
    from bot.storage import StoreSettings

_log = logging.getLogger(__name__)

Command = Callable[[argparse.Namespace, "Settings"], Coroutine[Any, Any, int]]
SnapshotCommand = Callable[[argparse.Namespace, "StoreSettings"], Coroutine[Any, Any, int]]

EXIT_USER_ERROR = 1
EXIT_USAGE = 2  # a command line the parser refuses, as argparse and most tools exit
EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # what a shell reports for `lorebot … | head`

# Commands that act on the database as it is: without one they say where they looked
# instead of starting an empty one (when they open it, after checking their arguments).
EXISTING_DATABASE = frozenset(
    {
        "notes list",
        "notes show",
        "notes search",
        "notes history",
        "notes export",
        "notes reembed",
        "notes forget",
        "notes revert",
        "notes undo",
        "proposals list",
        "proposals approve",
        "proposals reject",
        "actions list",
        "actions allowances",
        "actions revoke",
        "jobs list",
        "jobs run",
        "backup",
        "console link",
    }
)
# Commands that touch the database's folder before `open_memory` would check it (a copy,
# a lock file), so the check comes first: command -> whether it may start a database.
CHECKED_FIRST = {"backup": False, "chat": True, "run": True}
# Commands that only read notes: they start from the settings snapshot of their last full
# load when nothing it came from changed (bot/config/snapshot.py), without pydantic.
SNAPSHOT_COMMANDS = frozenset({"notes list", "notes show", "notes search"})


class UsageError(UserError):
    """A command line the parser refuses: one line naming the command and its --help."""

    def __init__(self, prog: str, problem: str) -> None:
        super().__init__(f"{prog}: {' '.join(problem.split())} (see '{prog} --help')")


class _Parser(argparse.ArgumentParser):
    """A parser that reports a mistake as a UsageError instead of a usage block and exit
    2; every subcommand's parser is one too (subparsers take their parent's class)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lorebot",
        description="A self-hosted chat-ops bot with reviewed memory, for Slack and Discord.",
    )
    parser.add_argument("--version", action="version", version=f"lorebot {__version__}")
    _add_common_options(parser, top=True)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    notes_cli.add_parser(commands)
    history_cli.add_parser(commands)
    chat_cli.add_parsers(commands)
    proposals_cli.add_parser(commands)
    run_cli.add_parser(commands)
    skills_cli.add_parser(commands)
    jobs_cli.add_parser(commands)
    backup_cli.add_parsers(commands)
    db_cli.add_parser(commands)
    actions_cli.add_parser(commands)
    doctor_cli.add_parser(commands)
    config_cli.add_parser(commands)
    console_cli.add_parser(commands)
    completion = commands.add_parser("completion", help="print a shell completion script")
    completion.add_argument(
        "shell", choices=["bash", "zsh"], help="the shell: bash or zsh (see docs/operations.md)"
    )
    completion.set_defaults(standalone=_print_completion)
    for path, sub in _subparsers(parser):
        _add_common_options(sub, top=False)
        sub.set_defaults(command_path=" ".join(path))
    return parser


def _add_common_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The options every command takes, before or after its name; a subcommand sets them
    only when given, so `lorebot --debug notes list` keeps its `--debug`."""
    unset: Any = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        default=unset,
        help="TOML config file (or LOREBOT_CONFIG; else ~/.config/lorebot/config.toml, "
        "then /etc/lorebot/config.toml)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="debug logs and full tracebacks",
    )
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=unset,
        help="log lines as text or JSON (default: observability.log_format)",
    )


def _subparsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every subcommand's parser with its path, e.g. `("notes", "list")`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subparsers(sub, (*path, name))


def _print_completion(args: argparse.Namespace) -> int:
    import shtab  # only here: every other command starts without it

    parser = build_parser()
    for _, sub in [((), parser), *_subparsers(parser)]:
        for action in sub._actions:
            if action.type is Path:  # --config, and the paths commands take
                action.complete = shtab.FILE  # type: ignore[attr-defined]
    print(shtab.complete(parser, shell=args.shell))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `lorebot` console script."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`lorebot … | head`): say nothing, and keep Python's exit-time
        # flush from failing again (see "Note on SIGPIPE" in the signal module's docs).
        _discard_stdout()
        return EXIT_BROKEN_PIPE


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file, as under pytest
        pass


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; a UsageError naming the subcommand for arguments it does
    not take (argparse would blame `lorebot`, which collects them from its subcommands)."""
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        noun = "argument" if len(unknown) == 1 else "arguments"
        problem = f"unrecognized {noun} {' '.join(unknown)}"
        raise UsageError(f"lorebot {args.command_path}", problem)
    return args


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = _parse(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    standalone: Callable[[argparse.Namespace], int] | None = getattr(args, "standalone", None)
    try:
        if standalone is not None:  # needs no settings, so it works while they are broken
            return standalone(args)
        # Loaded here, not at the top: `--help` and a mistyped command need none of it.
        import asyncio

        from bot.daemon.logs import configure_logging
        from bot.storage import check_database, existing_database_only

        path = getattr(args, "command_path", "")
        settings = _settings(args.config, snapshot=path in SNAPSHOT_COMMANDS)
        log_format = args.log_format or settings.observability.log_format
        level = logging.DEBUG if args.debug else logging.getLevelName(settings.log_level)
        if not args.debug and not getattr(args, "daemon", False):
            level = max(level, logging.WARNING)  # one-shot commands: only what goes wrong
        configure_logging(level, log_format, settings.secrets())
        if path in CHECKED_FIRST:
            check_database(settings, create=CHECKED_FIRST[path])
        command: Command | SnapshotCommand = args.command
        with existing_database_only(path in EXISTING_DATABASE):
            # Only a SNAPSHOT_COMMANDS command may be given a snapshot, which it takes.
            code = asyncio.run(command(args, settings))  # type: ignore[arg-type]
        if code == 0 and path in SNAPSHOT_COMMANDS:
            _keep_snapshot(args.config, settings)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise
    except ConfigError as exc:
        if getattr(args, "command", None) is doctor_cli.cmd_doctor:
            return _doctor_config_problems(exc, as_json=args.json)
        return _user_error(exc, str(exc), args.debug)
    except Exception as exc:
        message = user_message(exc)
        if message is not None:
            return _user_error(exc, message, args.debug)
        if args.debug:
            raise
        print(
            f"lorebot: unexpected error: {type(exc).__name__}: {exc} "
            "(run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR


def _settings(config: Path | None, *, snapshot: bool) -> Settings | SettingsSnapshot:
    """The settings, loaded in full, or for `snapshot` commands from the snapshot when
    nothing it came from changed."""
    if snapshot:
        from bot.config import snapshot as settings_snapshot

        kept = settings_snapshot.load(config)
        if kept is not None:
            return kept
    from bot.config.loading import load_settings

    return load_settings(config)


def _keep_snapshot(config: Path | None, settings: Settings | SettingsSnapshot) -> None:
    """After a snapshot command succeeded on settings loaded in full, keep them for the
    next one (a failed command leaves nothing behind)."""
    from bot.config import snapshot as settings_snapshot

    if not isinstance(settings, settings_snapshot.SettingsSnapshot):
        settings_snapshot.save(config, settings)


def _user_error(exc: Exception, message: str, debug: bool) -> int:
    if debug:
        _log.exception("user error")
    for line in message.splitlines():  # a configuration may have several problems
        print(f"lorebot: {line}", file=sys.stderr)
    return EXIT_USER_ERROR


def _doctor_config_problems(exc: ConfigError, *, as_json: bool) -> int:
    """`lorebot doctor` with settings that do not load: each problem as a failed check."""
    checks = [doctor_cli.Check(False, "config", problem) for problem in str(exc).splitlines()]
    if as_json:
        doctor_cli.print_json_report(checks)
        return EXIT_USER_ERROR
    for check in checks:
        print(doctor_cli.line(check))
    print(f"0 of {len(checks)} checks passed (fix the configuration for the other checks)")
    return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
