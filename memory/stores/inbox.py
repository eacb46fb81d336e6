"""The events lorebot took and has not finished, kept until they are: the inbox.

An event is stored in the transaction that records its id as seen, before the platform
hears that it was taken, so a replica that dies after that loses nothing: another one
(or the next start) handles it. A conversation's events are handled by one replica at a
time, in the order they were taken: the one holding the conversation's claim. A claim is
kept for `CLAIM_LEASE` and renewed while its holder works; one not renewed in time is a
holder that is gone, and anyone may take the conversation over. An entry the gone holder
had begun is handed to the next holder marked `abandoned`: its turn may have run part-way.

A claim has a fencing token, new whenever the claim changes hands. A holder that stopped
for longer than the lease (a paused process, a frozen VM) may wake up in the middle of a
turn whose conversation another replica has taken over since: before each effect of the
turn, its holder extends the claim under the token it began with (`hold`), and removes the
finished entry under it too (`finish`), so a replica that lost the claim stops quietly.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, Protocol

# How long a claim holds without being renewed (its holder renews it every few seconds).
CLAIM_LEASE = timedelta(seconds=10)

Taken = Literal["taken", "duplicate", "full"]


@dataclass(frozen=True, slots=True)
class InboxEntry:
    """One event waiting in a conversation, as it was taken."""

    id: int
    key: str  # the platform's event id, as `SeenEvents` keeps it
    payload: dict[str, Any]
    abandoned: bool  # begun by a holder that is gone
    token: int  # the fencing token of the claim it was begun under


Next = InboxEntry | bool
"""What begins a conversation's next entry says: the entry begun; True when the claim was
kept (an entry came as it was let go); False when it was let go or is another holder's."""


def new_token() -> int:
    """A claim's fencing token: random, so that one never comes back after a claim was let
    go and taken again (0 is a claim from before tokens)."""
    return secrets.randbits(62) + 1


def read_payload(text: str) -> dict[str, Any]:
    """A stored event as the dispatcher reads it; `{}` when the text is not a JSON object
    (written by hand, or damaged), which the dispatcher drops as unreadable at once rather
    than failing on it at every sweep while the conversation's later events wait."""
    try:
        payload = json.loads(text)
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def platform_of(conversation: str) -> str:
    """The platform of a conversation key (`slack/C123`)."""
    return conversation.split("/", 1)[0]


class Inbox(Protocol):
    """Events taken and not finished, and who handles each conversation."""

    async def take(
        self, key: str, conversation: str, payload: dict[str, Any], *, limit: int
    ) -> Taken:
        """Record the event `key` as seen and store it in one transaction: "duplicate" when
        it was seen already, "full" (and nothing recorded) when `limit` events wait."""
        ...

    async def take_and_claim(
        self,
        key: str,
        conversation: str,
        payload: dict[str, Any],
        *,
        limit: int,
        holder: str | None = None,
    ) -> tuple[Taken, bool]:
        """`take`, and with `holder` `claim` (whatever the outcome), in one transaction:
        the outcome, and whether `holder` now has the conversation (and so handles what
        waits in it)."""
        ...

    async def claim(self, conversation: str, holder: str) -> bool:
        """Take the conversation for `holder`: True when it is unclaimed, its claim lapsed,
        or `holder` has it already. A claim taken from another holder, or anew, gets a new
        fencing token; `holder` keeps its own."""
        ...

    async def hold(self, conversation: str, holder: str, token: int) -> bool:
        """Extend the claim by `CLAIM_LEASE` when `holder` still has it under `token`:
        whether it does (the check before each effect of a turn)."""
        ...

    async def next(self, conversation: str, holder: str) -> InboxEntry | None:
        """The conversation's oldest entry, marked as begun, with the claim extended by
        `CLAIM_LEASE`; None when there is none or `holder` no longer holds the conversation."""
        ...

    async def finish(self, entry: InboxEntry, holder: str) -> bool:
        """The entry was handled: remove it, when `holder` still has its conversation under
        the entry's token (else its new holder handles it); whether it was removed."""
        ...

    async def release(self, conversation: str, holder: str) -> bool:
        """Let the conversation go unless entries still wait in it; False when it was let go
        (or `holder` no longer has it), True when `holder` keeps it to handle what waits."""
        ...

    async def next_or_release(self, conversation: str, holder: str) -> Next:
        """`next`, and when it finds nothing `release`, in one round trip: the entry, else
        what `release` says."""
        ...

    async def claim_next(self, conversation: str, holder: str) -> Next:
        """`claim`, then `next_or_release`, in one round trip: the entry begun; False when
        the conversation is another holder's, or nothing waited and it was let go."""
        ...

    async def finish_next(
        self, entry: InboxEntry, conversation: str, holder: str
    ) -> tuple[bool, Next]:
        """`finish`, then `next_or_release`, in one transaction and one round trip: whether
        the entry was removed, and what `next_or_release` says."""
        ...

    async def let_go(self, conversation: str, holder: str) -> None:
        """Let the conversation go even with entries waiting (`holder` stops): another
        replica, or the next start, takes them up."""
        ...

    async def renew(self, holder: str, conversations: list[str]) -> int:
        """Extend the claims of `holder` on `conversations` by `CLAIM_LEASE`; how many. A
        claim its holder no longer works on is left to lapse."""
        ...

    async def release_all(self) -> None:
        """Let every claim go: for the one daemon of a SQLite file, at its start, when any
        claim left is a stopped process's (its lock file says no other runs)."""
        ...

    async def fetch_unclaimed(self, platforms: list[str]) -> list[str]:
        """Conversations of `platforms` with waiting entries and no live claim."""
        ...

    async def fetch_busy(self) -> set[str]:
        """Conversations with a live claim, whoever holds them, or with entries waiting."""
        ...

    async def forget_taken_before(self, age: timedelta) -> int:
        """Drop entries taken longer than `age` ago, begun or not (a platform no replica
        answers any more, or a conversation stuck on a fault): an answer that late helps
        nobody, and they would count against the queue limit. How many."""
        ...

    async def waiting(self) -> int:
        """How many entries wait or are being handled, in every conversation."""
        ...
