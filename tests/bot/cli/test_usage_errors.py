"""A command line the parser refuses, for every command alike: exit status 2 and one line
naming the command that was mistyped and its `--help`, never argparse's usage block."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.main import build_parser, main


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    """Every command and subcommand of `parser`, e.g. `("notes", "list")`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from commands(sub, (*path, name))


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line `lorebot ARGV` prints when the parser refuses it."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    [line] = err.splitlines()
    return line


def test_an_unknown_option_names_the_subcommand_and_its_help(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refused(capsys, "notes", "list", "--bogus") == (
        "lorebot notes list: unrecognized argument --bogus (see 'lorebot notes list --help')"
    )
    assert refused(capsys, "notes", "list", "--bogus", "extra") == (
        "lorebot notes list: unrecognized arguments --bogus extra (see 'lorebot notes list --help')"
    )
    assert refused(capsys, "notes", "list", "--scope") == (
        "lorebot notes list: argument --scope: expected one argument "
        "(see 'lorebot notes list --help')"
    )
    assert refused(capsys, "nots", "list").startswith(
        "lorebot: argument COMMAND: invalid choice: 'nots' (choose from "
    )
    assert refused(capsys) == (
        "lorebot: the following arguments are required: COMMAND (see 'lorebot --help')"
    )
    assert not list(env.glob("*.db"))  # nothing ran


@pytest.mark.parametrize("command", [" ".join(path) for path in commands(build_parser())])
def test_every_command_refuses_a_mistake_in_one_line(
    env: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    line = refused(capsys, *command.split(), "--bogus")
    assert line.startswith(f"lorebot {command}: ")
    assert line.endswith(f" (see 'lorebot {command} --help')")
