"""Reading chat history for import: a Slack workspace export, DiscordChatExporter JSON
files, or JSON Lines of messages. The platforms' own formats are read by their adapters
(`adapters/slack/export.py`, `adapters/discord/export.py`), which the command line hands
here as `ExportReaders`: memory may not import a platform.

Each message becomes a `PastMessage` in the conversation the live bot keeps such messages
in, readable where it was readable: a channel's messages in that channel, a DM's only in
its people's own DMs with lorebot. Everything is parsed before anything is written, and
the first malformed file raises `InvalidInput` naming the file and the field.
"""

from __future__ import annotations

import functools
import hashlib
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Required

from pydantic import AwareDatetime, ConfigDict, TypeAdapter, with_config
from typing_extensions import TypedDict

from memory.errors import InvalidInput
from memory.stores.conversations import PastMessage
from memory.transfer.history_parse import (
    Collector,
    HistoryExport,
    Id,
    ImportOptions,
    Progress,
    parse,
    read_bytes,
)
from memory.types import Scope, ScopeKind

__all__ = [
    "Collector",
    "ExportReaders",
    "HistoryExport",
    "ImportOptions",
    "iter_history",
    "read_history",
]

_SUFFIXES = (".json", ".jsonl")


@dataclass(frozen=True, slots=True)
class ExportReaders:
    """The readers of the platforms' own export formats."""

    is_workspace: Callable[[Path], bool]
    """Whether a folder is a whole workspace's export (Slack's); a ZIP always is one."""
    read_workspace: Callable[[Path, Collector], Iterator[PastMessage]]
    """The messages of a workspace export, its folder or its ZIP."""
    read_json: Callable[[bytes, str, Collector], None]
    """Adds the messages of one .json file (DiscordChatExporter's), named in errors."""


def read_history(
    path: Path, options: ImportOptions, readers: ExportReaders, progress: Progress | None = None
) -> HistoryExport:
    """Every message of the export at `path` at once (see `iter_history`)."""
    collector = Collector(options, progress)
    messages = list(iter_history(path, collector, readers))
    return HistoryExport(messages, collector.skipped)


def iter_history(path: Path, collector: Collector, readers: ExportReaders) -> Iterator[PastMessage]:
    """The messages of the export at `path`, read as they are asked for: a Slack export
    folder or ZIP, a DiscordChatExporter .json file, a .jsonl file, or a folder of
    .json/.jsonl files. Each conversation's messages come oldest first; `collector`
    counts what was left out."""
    if (path.is_dir() and readers.is_workspace(path)) or (
        path.is_file() and zipfile.is_zipfile(path)
    ):
        yield from readers.read_workspace(path, collector)
    elif path.is_dir():
        found = sorted((p for p in path.rglob("*") if p.suffix in _SUFFIXES), key=_natural)
        yield from _read_files(path, found, collector, readers)
    elif path.is_file():
        yield from _read_files(path, [path], collector, readers)
    else:
        raise InvalidInput(f"{path} does not exist")


def _natural(path: Path) -> list[Any]:
    """Sort key putting `… [part 2].json` before `… [part 10].json`."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _read_files(
    root: Path, paths: Sequence[Path], collector: Collector, readers: ExportReaders
) -> Iterator[PastMessage]:
    if not paths:
        raise InvalidInput(
            f"{root} holds no history: expected a Slack export (users.json, channels.json), "
            "DiscordChatExporter .json files or .jsonl files"
        )
    collector.total = len(paths)
    for path in paths:
        data = read_bytes(path)
        if path.suffix == ".jsonl":
            _read_jsonl(data, str(path), collector)
        else:
            readers.read_json(data, str(path), collector)
        collector.step()
        yield from collector.take()


# --- JSON Lines ---------------------------------------------------------------------------


@with_config(ConfigDict(extra="forbid"))
class JsonlMessage(TypedDict, total=False):
    """One line of the JSON Lines form (see README), as a plain dict."""

    conversation: Required[str]
    author: str
    author_id: Id | None
    timestamp: Required[AwareDatetime]
    text: Required[str]
    thread: Id | None
    id: str | None
    link: str
    bot: bool


_JSONL = TypeAdapter(JsonlMessage)


def _read_jsonl(data: bytes, source: str, collector: Collector) -> None:
    # Only "\n" ends a line: JSON strings may hold U+2028 and other breaks.
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        message = parse(_JSONL, line, where)
        is_dm, place = _jsonl_place(message["conversation"], where)
        if is_dm and not collector.options.include_private:
            collector.skipped["private messages"] += 1
            continue
        text = message["text"].strip()
        if not collector.keep("bot" if message.get("bot", False) else "person", text):
            continue
        platform, thread = place.platform, message.get("thread") or ""
        author_id = message.get("author_id")
        collector.add(
            [str(place)],
            source_id=f"{platform}/{place.id}/{message.get('id') or _digest(message)}",
            conversation=f"{'dm:' if is_dm else ''}{platform}/{place.id}/{thread}",
            author=f"user:{platform}/{author_id}" if author_id else "",
            author_name=message.get("author", ""),
            content=text,
            created_at=message["timestamp"],
            link=message.get("link", ""),
        )


def _jsonl_place(conversation: str, where: str) -> tuple[bool, Scope]:
    """(is a DM, the scope that reads it) for a line's `conversation`."""
    scope = _conversation_scope(conversation)
    if scope is None:
        raise InvalidInput(
            f"{where}: field 'conversation': expected channel:PLATFORM/ID, PLATFORM/ID or "
            f"user:PLATFORM/ID (a DM with that person), got {conversation!r}"
        )
    return scope.kind is ScopeKind.USER, scope


@functools.lru_cache(maxsize=4096)
def _conversation_scope(conversation: str) -> Scope | None:
    text = conversation.strip()
    if ":" not in text:
        text = f"channel:{text}"  # the PLATFORM/CHANNEL form
    try:
        scope = Scope.parse(text)
    except InvalidInput:
        return None
    return None if scope.kind is ScopeKind.TEAM else scope


def _digest(message: JsonlMessage) -> str:
    """An id for a line without one, the same when the line is imported again."""
    fields = (
        message["conversation"],
        message.get("thread") or "",
        message["timestamp"].isoformat(),
        message.get("author_id") or message.get("author", ""),
        message["text"],
    )
    return hashlib.sha256("\x00".join(fields).encode("utf-8", "replace")).hexdigest()[:24]
