"""What the command groups share: who acts from the shell, how `--json` prints and dates
times, and opening the stores. Light to import: `notes search` starts with it."""

from __future__ import annotations

import getpass
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.storage import StoreSettings
    from memory.stores.notes import NoteStore
    from memory.stores.stores import Stores


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
async def open_stores(
    settings: StoreSettings, *, vectors: bool = False, create: bool | None = None
) -> AsyncIterator[Stores]:
    """Every store of the database; `vectors` checks the embedding model and searches
    with it; `create` is as for `open_memory`."""
    from bot.storage import open_memory, quick_embedder_for

    embedder = quick_embedder_for(settings)
    stores = await open_memory(
        settings, embedder=embedder, prepare=vectors, probe=False, create=create
    )
    try:
        yield stores
    finally:
        await stores.close()


@asynccontextmanager
async def open_store(
    settings: StoreSettings, *, vectors: bool = False, create: bool | None = None
) -> AsyncIterator[NoteStore]:
    """The note store, as `open_stores` opens it."""
    async with open_stores(settings, vectors=vectors, create=create) as stores:
        yield stores.notes
