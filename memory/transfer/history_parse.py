"""What every history export reader shares: the import options, the collected messages
and what was left out, and JSON validation whose errors name the file and the field.

The platforms' readers (`adapters/slack/export.py`, `adapters/discord/export.py`) import
nothing else of memory: what they need is all named here, the error and message included.
"""

from __future__ import annotations

import json
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, StringConstraints, TypeAdapter, ValidationError

from memory.errors import InvalidInput

__all__ = [
    "Collector",
    "HistoryExport",
    "Id",
    "ImportOptions",
    "InvalidInput",
    "PastMessage",
    "Progress",
    "W",
    "Wire",
    "clean",
    "describe",
    "parse",
    "read_bytes",
]
from memory.stores.conversations import PastMessage

Progress = Callable[[int, int], None]
"""Called with (files read, files in all)."""

Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.@-]{1,128}$")]
"""A platform's id of a person, channel or message, usable in a scope."""

W = TypeVar("W")


class Wire(BaseModel):
    """A shape read from an export: fields lorebot does not use are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """What to bring in beyond people's messages in channels."""

    include_private: bool = False
    include_bots: bool = False
    include_system: bool = False
    slack_workspace_url: str = ""  # e.g. https://acme.slack.com, for links to messages


@dataclass(slots=True)
class HistoryExport:
    """The messages read and what was left out (`"bot messages": 3`)."""

    messages: list[PastMessage] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def conversations(self) -> int:
        return len({m.conversation for m in self.messages})


class Collector:
    """Gathers an export's messages one conversation place (a channel, a file) at a time,
    applying the options; counts what it left out, and reports files read."""

    def __init__(self, options: ImportOptions, progress: Progress | None = None) -> None:
        self.options = options
        self.progress = progress or (lambda done, total: None)
        self._wanted = {
            "person": True,
            "bot": options.include_bots,
            "system": options.include_system,
        }
        self.skipped: Counter[str] = Counter()
        self.conversations: set[str] = set()
        self.count = 0
        self.done = 0
        self.total = 0
        self._pending: list[PastMessage] = []

    def step(self) -> None:
        """One more file read."""
        self.done += 1
        self.progress(self.done, self.total)

    def keep(self, kind: str, text: str) -> bool:
        """Whether a message of this kind (person, bot, system, deleted) with this text is
        imported; counts the ones that are not."""
        if self._wanted.get(kind, False):
            if text:
                return True
            kind = "empty"
        self.skipped[f"{kind} messages"] += 1
        return False

    def skip_private(self) -> bool:
        """Whether a private conversation (a DM, a private channel) is left out; counted."""
        if self.options.include_private:
            return False
        self.skipped["private conversations"] += 1
        return True

    def add(
        self,
        readers: Iterable[str],
        source_id: str,
        conversation: str,
        author: str,
        author_name: str,
        content: str,
        created_at: datetime,
        link: str,
    ) -> None:
        """One message, stored once for each scope that may read it."""
        author_name, content = clean(author_name), clean(content)
        for scope in readers:
            self._pending.append(
                PastMessage(
                    source_id, conversation, scope, author, author_name, content, created_at, link
                )
            )

    def take(self) -> list[PastMessage]:
        """The messages added since the last call, oldest first in each conversation."""
        found, self._pending = self._pending, []
        found.sort(key=_ORDER)
        self.count += len(found)
        self.conversations.update(map(_CONVERSATION, found))
        return found


_ORDER = operator.attrgetter("conversation", "scope", "created_at")
_CONVERSATION = operator.attrgetter("conversation")


def parse(adapter: TypeAdapter[W], data: bytes, where: str, item: str = "entry") -> W:
    """Validate JSON `data`; any problem is one line naming `where` and the field."""
    try:
        return adapter.validate_json(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] != "json_invalid":
            raise InvalidInput(f"{where}: {describe(error, item)}") from None
    # pydantic refuses a lone surrogate (`\ud800`, a cut emoji) that the stdlib accepts.
    try:
        loaded = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        # A whole file says which of its lines; one line of a .jsonl is named by `where`.
        line = data.count(b"\n", 0, exc.start) + 1
        at = f" line {line}" if b"\n" in data.strip() else ""
        raise InvalidInput(f"{where}{at}: not valid UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{where}: not valid JSON: {str(exc).splitlines()[0]}") from None
    try:
        return adapter.validate_python(loaded)
    except ValidationError as exc:
        raise InvalidInput(f"{where}: {describe(exc.errors()[0], item)}") from None


def describe(error: Mapping[str, Any], item: str) -> str:
    """`message 4: field 'ts': String should match pattern …` from a pydantic error."""
    loc = list(error["loc"])
    where = ""
    if any(isinstance(part, int) for part in loc):
        index = max(i for i, part in enumerate(loc) if isinstance(part, int))
        where = f"{item} {loc[index] + 1}: "
        loc = [p for p in loc[index + 1 :] if not isinstance(p, int)]
    name = ".".join(str(p) for p in loc) or item
    message = " ".join(str(error["msg"]).split()).removeprefix("Value error, ")
    return f"{where}field {name!r}: {message}"


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path} cannot be read: {exc.strerror or exc}") from None


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean(text: str) -> str:
    """`text` storable as UTF-8: each lone surrogate becomes U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
