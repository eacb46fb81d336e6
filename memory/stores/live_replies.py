"""Replies being streamed: what each shows so far, so one that a crash cut short can be
finished with a notice at the next start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class LiveReplyRow:
    """A streamed reply left unfinished: where it is and the text it showed."""

    id: int
    platform: str
    conversation: dict[str, Any]
    message_id: str
    shown: str


class LiveReplies(Protocol):
    """A record per reply while it streams, gone once finished."""

    async def record(
        self, platform: str, conversation: Mapping[str, Any], message_id: str, shown: str
    ) -> None:
        """Note what the reply `message_id` shows now."""
        ...

    async def done(self, platform: str, message_id: str) -> None:
        """The reply was finished (or mended): forget it."""
        ...

    async def fetch_unfinished(self, platform: str) -> list[LiveReplyRow]:
        """Replies of `platform` a crash or a lost connection left unfinished, oldest first."""
        ...
