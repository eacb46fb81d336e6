"""Reading a Slack workspace export, from its ZIP or its unpacked folder.

`users.json` (`org_users.json` from an Enterprise Grid) names the people; `channels.json`
(public channels), `groups.json` (private channels), `mpims.json` (group DMs) and
`dms.json` list the conversations, each with a folder of daily files (`2026-10-01.json`,
a list of messages) named after the channel, or after the id for a DM. A thread's parent
and replies share its `thread_ts`.

As the live bot keeps them: a thread is a conversation `slack/C…/<thread_ts>`, the rest of
a channel `slack/C…/`, a DM `dm:slack/D…/`; a channel's or group DM's messages are read in
that conversation, a DM's by each of its people in their own DMs with lorebot.

`lorebot history import` hands this reader to memory's importer, which may not import a
platform; it builds on memory's neutral parsing helpers (`memory/transfer/history_parse.py`).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Annotated, Protocol, Required

from pydantic import StringConstraints, TypeAdapter
from typing_extensions import TypedDict

from memory.transfer.history_parse import Collector, Id, InvalidInput, PastMessage, W, Wire, parse

SlackTs = Annotated[str, StringConstraints(pattern=r"^\d{1,10}\.\d{1,9}$")]  # to 2286

# Subtypes a person writes; bots and channel events (joins, topic changes…) have others.
_PEOPLE = frozenset(
    {
        "thread_broadcast",
        "reply_broadcast",
        "file_share",
        "file_comment",
        "file_mention",
        "me_message",
    }
)
_DELETED = frozenset({"tombstone", "message_deleted"})
_BOTS = frozenset({"bot_message", "slackbot_response"})
_MARKERS = ("users.json", "org_users.json", "channels.json")
_LISTS = (
    ("channels.json", "public"),
    ("groups.json", "private"),
    ("mpims.json", "mpim"),
    ("dms.json", "dm"),
)


class SlackProfile(Wire):
    display_name: str | None = None
    real_name: str | None = None
    name: str | None = None


class SlackUser(Wire):
    id: Id
    name: str | None = None
    real_name: str | None = None
    is_bot: bool = False
    profile: SlackProfile = SlackProfile()


class SlackConversation(Wire):
    id: Id
    name: str | None = None
    members: list[Id] | None = None


# A message and what it holds are read as plain dicts (keys not listed are dropped): a
# model object for every message would cost more than reading the JSON.


class SlackFile(TypedDict, total=False):
    name: str | None
    title: str | None


class SlackAuthor(TypedDict, total=False):
    """The author's profile a message carries."""

    display_name: str | None
    real_name: str | None
    name: str | None


class SlackMessage(TypedDict, total=False):
    type: str
    subtype: str | None
    user: Id | None
    bot_id: str | None
    username: str | None
    text: str | None
    ts: Required[SlackTs]
    thread_ts: SlackTs | None
    files: list[SlackFile] | None
    user_profile: SlackAuthor | None


_USERS = TypeAdapter(list[SlackUser])
_CONVERSATIONS = TypeAdapter(list[SlackConversation])
_DAY = TypeAdapter(list[SlackMessage])


def is_slack_folder(path: Path) -> bool:
    return any((path / name).is_file() for name in _MARKERS)


def read_slack(path: Path, collector: Collector) -> Iterator[PastMessage]:
    """The messages of the Slack export at `path` (a folder or a ZIP), a channel at a time."""
    if path.is_dir():
        yield from _read(_Folder(path), collector)
        return
    try:
        with zipfile.ZipFile(path) as archive:
            yield from _read(_Zip(path, archive), collector)
    except zipfile.BadZipFile as exc:
        raise InvalidInput(f"{path} is not a readable ZIP file: {exc}") from None


# --- where files come from ----------------------------------------------------------------


class _Source(Protocol):
    def read(self, name: str) -> bytes | None: ...

    def days(self, folder: str) -> list[str]: ...

    def where(self, name: str) -> str: ...


class _Folder:
    """An unpacked export."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, name: str) -> bytes | None:
        path = self.root / name
        try:
            return path.read_bytes() if path.is_file() else None
        except OSError as exc:
            raise InvalidInput(f"{path} cannot be read: {exc.strerror or exc}") from None

    def days(self, folder: str) -> list[str]:
        base = self.root / folder
        if not folder or not base.is_dir():
            return []
        return sorted(f"{folder}/{p.name}" for p in base.glob("*.json"))

    def where(self, name: str) -> str:
        return str(self.root / name)


class _Zip:
    """An export ZIP, its files at the top or inside one folder."""

    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        self.path = path
        self.archive = archive
        names = [n for n in archive.namelist() if not n.endswith("/")]
        tops = [n for n in names if PurePosixPath(n).name in _MARKERS]
        if not tops:
            raise InvalidInput(f"{path}: not a Slack export (no users.json or channels.json)")
        self.prefix = min(tops, key=len).rpartition("/")[0]
        self.prefix += "/" if self.prefix else ""
        self.by_folder: dict[str, list[str]] = {}
        for name in names:
            relative = name.removeprefix(self.prefix)
            folder, _, day = relative.rpartition("/")
            if folder and "/" not in folder and day.endswith(".json"):
                self.by_folder.setdefault(folder, []).append(relative)

    def read(self, name: str) -> bytes | None:
        try:
            return self.archive.read(self.prefix + name)
        except KeyError:
            return None
        except (zipfile.BadZipFile, OSError) as exc:
            raise InvalidInput(f"{self.where(name)} cannot be read: {exc}") from None

    def days(self, folder: str) -> list[str]:
        return sorted(self.by_folder.get(folder, []))

    def where(self, name: str) -> str:
        return f"{self.path}:{self.prefix}{name}"


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Place:
    """One conversation of the export and its daily files."""

    conversation: SlackConversation
    kind: str  # public, private, mpim or dm
    days: list[str]


def _read(source: _Source, collector: Collector) -> Iterator[PastMessage]:
    # An Enterprise Grid export names its people in org_users.json.
    people = _list(source, "users.json", _USERS) or _list(source, "org_users.json", _USERS)
    users = {u.id: u for u in people}
    places: list[_Place] = []
    for file, kind in _LISTS:
        for conversation in _list(source, file, _CONVERSATIONS):
            folders = [conversation.name or "", conversation.id]
            if kind == "dm":
                folders.reverse()  # channels are saved under their name, DMs their id
            days = next((d for f in folders if (d := source.days(f))), [])
            if days and (kind == "public" or not collector.skip_private()):
                places.append(_Place(conversation, kind, days))
    collector.total = sum(len(p.days) for p in places)
    names = _Names(users, {p.conversation.id: p.conversation.name or "" for p in places})
    for place in places:
        _read_place(source, place, names, collector)
        yield from collector.take()


def _list(source: _Source, name: str, adapter: TypeAdapter[list[W]]) -> list[W]:
    data = source.read(name)
    return [] if data is None else parse(adapter, data, source.where(name))


def _read_place(source: _Source, place: _Place, names: _Names, collector: Collector) -> None:
    channel = place.conversation.id
    found: list[SlackMessage] = []
    for day in place.days:
        messages = parse(_DAY, source.read(day) or b"[]", source.where(day), "message")
        found.extend(messages)
        collector.step()
    if place.kind == "dm":
        people = place.conversation.members or [u for m in found if (u := m.get("user"))]
        readers = sorted({f"user:slack/{p}" for p in people if not names.is_bot(p)})
    else:
        readers = [f"channel:slack/{channel}"]
    marker = "dm:" if place.kind == "dm" else ""
    workspace = collector.options.slack_workspace_url
    for message in found:
        if not collector.keep(_kind(message, names), text := names.plain(message)):
            continue
        ts, user = message["ts"], message.get("user")
        collector.add(
            readers,
            source_id=f"slack/{channel}/{ts}",
            conversation=f"{marker}slack/{channel}/{message.get('thread_ts') or ''}",
            author=f"user:slack/{user}" if user else "",
            author_name=names.author(message),
            content=text,
            created_at=_time(ts),
            link=_link(workspace, channel, message),
        )


def _kind(message: SlackMessage, names: _Names) -> str:
    subtype = message.get("subtype")
    if subtype in _DELETED:
        return "deleted"
    user = message.get("user")
    if subtype in _BOTS or message.get("bot_id") or (user and names.is_bot(user)):
        return "bot"
    if message.get("type", "message") != "message" or (
        subtype is not None and subtype not in _PEOPLE
    ):
        return "system"
    return "person"


def _time(ts: str) -> datetime:
    seconds, _, fraction = ts.partition(".")
    return _EPOCH + timedelta(0, int(seconds), int(fraction[:6].ljust(6, "0")))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _link(workspace_url: str, channel: str, message: SlackMessage) -> str:
    """The message's web link, made as the live bot makes it; none without the workspace."""
    if not workspace_url:
        return ""
    ts, thread_ts = message["ts"], message.get("thread_ts")
    link = f"{workspace_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link


# --- names and markup ---------------------------------------------------------------------

_TOKEN = re.compile(r"<([^<>\n]*)>")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


class _Names:
    """People's and channels' names of one export, for authors and Slack markup."""

    def __init__(self, users: Mapping[str, SlackUser], channels: Mapping[str, str]) -> None:
        self.users = users
        self.channels = channels
        self.names = {uid: _user_name(u) for uid, u in users.items()}

    def is_bot(self, user: str) -> bool:
        found = self.users.get(user)
        return user == "USLACKBOT" or (found is not None and found.is_bot)

    def author(self, message: SlackMessage) -> str:
        """The author's display name: from users.json, else the message's own profile."""
        user = message.get("user")
        if user and user in self.names:
            return self.names[user]
        profile = message.get("user_profile") or {}
        named = profile.get("display_name") or profile.get("real_name") or profile.get("name")
        return named or message.get("username") or user or message.get("bot_id") or ""

    def plain(self, message: SlackMessage) -> str:
        """Readable text: mentions by name, links with their URL, files by name."""
        text = message.get("text") or ""
        if "<" in text:
            text = _TOKEN.sub(lambda m: self._token(m.group(1)), text)
        if "&" in text:
            for entity, char in _ENTITIES:
                text = text.replace(entity, char)
        files = message.get("files")
        if files:
            names = (f.get("name") or f.get("title") for f in files)
            text += "".join(f" [file: {name}]" for name in names if name)
        return text.strip()

    def _token(self, inner: str) -> str:
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            return "@" + (self.names.get(target[1:]) or label.lstrip("@") or target[1:])
        if target.startswith("#"):
            return "#" + (label or self.channels.get(target[1:]) or target[1:])
        if target.startswith("!"):
            special = target[1:]
            if special in ("here", "channel", "everyone"):
                return "@" + special
            return label or special.split("^", 1)[0]
        if target.startswith(("mailto:", "tel:")):
            return label or target.split(":", 1)[1]
        return f"{label} ({target})" if label and label != target else target


def _user_name(user: SlackUser) -> str:
    profile = user.profile
    return profile.display_name or profile.real_name or user.real_name or user.name or user.id
