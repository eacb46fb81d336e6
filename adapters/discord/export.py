"""Reading DiscordChatExporter's JSON: one file per exported channel, thread or DM.

As the live bot keeps them: a channel's or thread's messages are read in the conversation
`discord/<channel>/`, a DM's (`dm:discord/<channel>/`) by each of its people in their own
DMs with lorebot.

`lorebot history import` hands this reader to memory's importer, which may not import a
platform; it builds on memory's neutral parsing helpers (`memory/transfer/history_parse.py`).
"""

from __future__ import annotations

from typing import Required

from pydantic import AwareDatetime, TypeAdapter
from typing_extensions import TypedDict

from memory.transfer.history_parse import Collector, Id, parse

_PEOPLE = frozenset({"Default", "Reply"})
_DMS = frozenset({"DirectTextChat", "DirectGroupTextChat"})
_PRIVATE = _DMS | {"GuildPrivateThread"}

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


_EXPORT = TypeAdapter(DiscordExport)


def read_discord(data: bytes, source: str, collector: Collector) -> None:
    """The messages of one exported .json file, `source` naming it in errors."""
    _read(parse(_EXPORT, data, source, "message"), collector)


def _read(export: DiscordExport, collector: Collector) -> None:
    """One exported channel: a channel or thread is read there, a DM by its people (the
    authors of its messages) in their own DMs with lorebot."""
    channel, messages = export["channel"]["id"], export["messages"]
    channel_type = export["channel"].get("type", "GuildTextChat")
    is_dm = channel_type in _DMS or export["guild"]["id"] == "0"
    if (is_dm or channel_type in _PRIVATE) and collector.skip_private():
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
        if not collector.keep(_kind(message), text := _text(message)):
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


def _kind(message: DiscordMessage) -> str:
    if message["author"].get("isBot", False):
        return "bot"
    return "person" if message.get("type", "Default") in _PEOPLE else "system"


def _text(message: DiscordMessage) -> str:
    """The message's text, and the names of its attached files."""
    text = message.get("content", "")
    if attachments := message.get("attachments"):
        names = (a.get("fileName", "") for a in attachments)
        text += "".join(f" [file: {name}]" for name in names if name)
    return text.strip()
