"""Reading chat history for import: a Slack workspace export (see memory/transfer/slack_export.py),
DiscordChatExporter JSON files, or JSON Lines of messages.

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
from collections.abc import Iterator, Sequence
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
from memory.transfer.slack_export import is_slack_folder, read_slack
from memory.types import Scope, ScopeKind

__all__ = ["Collector", "HistoryExport", "ImportOptions", "iter_history", "read_history"]

_DISCORD_PEOPLE = frozenset({"Default", "Reply"})
_DISCORD_DMS = frozenset({"DirectTextChat", "DirectGroupTextChat"})
_DISCORD_PRIVATE = _DISCORD_DMS | {"GuildPrivateThread"}
_SUFFIXES = (".json", ".jsonl")


def read_history(
    path: Path, options: ImportOptions, progress: Progress | None = None
) -> HistoryExport:
    """Every message of the export at `path` at once (see `iter_history`)."""
    collector = Collector(options, progress)
    messages = list(iter_history(path, collector))
    return HistoryExport(messages, collector.skipped)


def iter_history(path: Path, collector: Collector) -> Iterator[PastMessage]:
    """The messages of the export at `path`, read as they are asked for: a Slack export
    folder or ZIP, a DiscordChatExporter .json file, a .jsonl file, or a folder of
    .json/.jsonl files. Each conversation's messages come oldest first; `collector`
    counts what was left out."""
    if (path.is_dir() and is_slack_folder(path)) or (path.is_file() and zipfile.is_zipfile(path)):
        yield from read_slack(path, collector)
    elif path.is_dir():
        found = sorted((p for p in path.rglob("*") if p.suffix in _SUFFIXES), key=_natural)
        yield from _read_files(path, found, collector)
    elif path.is_file():
        yield from _read_files(path, [path], collector)
    else:
        raise InvalidInput(f"{path} does not exist")


def _natural(path: Path) -> list[Any]:
    """Sort key putting `… [part 2].json` before `… [part 10].json`."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _read_files(root: Path, paths: Sequence[Path], collector: Collector) -> Iterator[PastMessage]:
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
            _read_discord(parse(_DISCORD, data, str(path), "message"), collector)
        collector.step()
        yield from collector.take()


# --- DiscordChatExporter ------------------------------------------------------------------
# Read as plain dicts (keys not listed are dropped): a model object for every message
# would cost more than reading the JSON.


class DiscordGuild(TypedDict, total=False):
    id: Required[Id]  # "0" for direct messages
    name: str


class DiscordChannel(TypedDict, total=False):
    id: Required[Id]
    type: str
    name: str


class DiscordAuthor(TypedDict, total=False):
    id: Required[Id]
    name: str
    nickname: str | None
    isBot: bool


class DiscordAttachment(TypedDict, total=False):
    fileName: str


class DiscordMessage(TypedDict, total=False):
    id: Required[Id]
    type: str
    timestamp: Required[AwareDatetime]
    content: str
    author: Required[DiscordAuthor]
    attachments: list[DiscordAttachment]


class DiscordExport(TypedDict):
    guild: DiscordGuild
    channel: DiscordChannel
    messages: list[DiscordMessage]


_DISCORD = TypeAdapter(DiscordExport)


def _read_discord(export: DiscordExport, collector: Collector) -> None:
    """One exported channel: a channel or thread is read there, a DM by its people (the
    authors of its messages) in their own DMs with lorebot."""
    channel, messages = export["channel"]["id"], export["messages"]
    channel_type = export["channel"].get("type", "GuildTextChat")
    is_dm = channel_type in _DISCORD_DMS or export["guild"]["id"] == "0"
    if (is_dm or channel_type in _DISCORD_PRIVATE) and collector.skip_private():
        return
    if is_dm:
        people = {m["author"]["id"] for m in messages if not m["author"].get("isBot", False)}
        readers = sorted(f"user:discord/{p}" for p in people)
    else:
        readers = [f"channel:discord/{channel}"]
    guild = "@me" if is_dm else export["guild"]["id"]
    conversation = f"{'dm:' if is_dm else ''}discord/{channel}/"
    for message in messages:
        author, id_ = message["author"], message["id"]
        if not collector.keep(_discord_kind(message), text := _discord_text(message)):
            continue
        collector.add(
            readers,
            source_id=f"discord/{channel}/{id_}",
            conversation=conversation,
            author=f"user:discord/{author['id']}",
            author_name=author.get("nickname") or author.get("name") or author["id"],
            content=text,
            created_at=message["timestamp"],
            link=f"https://discord.com/channels/{guild}/{channel}/{id_}",
        )


def _discord_kind(message: DiscordMessage) -> str:
    if message["author"].get("isBot", False):
        return "bot"
    return "person" if message.get("type", "Default") in _DISCORD_PEOPLE else "system"


def _discord_text(message: DiscordMessage) -> str:
    """The message's text, and the names of its attached files."""
    text = message.get("content", "")
    if attachments := message.get("attachments"):
        names = (a.get("fileName", "") for a in attachments)
        text += "".join(f" [file: {name}]" for name in names if name)
    return text.strip()


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
