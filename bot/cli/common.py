"""What the command groups share: who acts from the shell, how `--json` prints and dates
times, and opening the note store. Light to import: `notes search` starts with it."""

from __future__ import annotations

import getpass
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.daemon.memory_setup import StoreSettings
    from memory import NoteStore


def cli_actor() -> str:
    """Who made a change from the command line, for the change sets."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli:unknown"


def iso_z(moment: datetime | None) -> str | None:
    """A time as every `--json` listing prints it: ISO 8601 in UTC ending in Z, to the
    second (the form jq's `fromdateiso8601` reads)."""
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def print_json(value: object) -> None:
    """Print a `--json` answer: UTF-8 as is, indented."""
    print(json.dumps(value, ensure_ascii=False, indent=2))


@asynccontextmanager
async def open_store(
    settings: StoreSettings, *, vectors: bool = False, create: bool | None = None
) -> AsyncIterator[NoteStore]:
    """The note store; `vectors` checks the embedding model and searches with it;
    `create` is as for `open_memory`."""
    from bot.daemon.memory_setup import open_memory, quick_embedder_for

    embedder = quick_embedder_for(settings)
    memory = await open_memory(
        settings, embedder=embedder, prepare=vectors, probe=False, create=create
    )
    try:
        yield memory.notes
    finally:
        await memory.close()
