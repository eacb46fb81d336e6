"""Fencing a turn on its conversation's claim: a replica that was paused past its lease
(a stopped process, a frozen VM, a long pause) may wake up in the middle of a turn whose
conversation another replica took over meanwhile. Before each effect of the turn (a post,
an edit, a decision applied, an action run) `still_held()` extends the claim under the
token the turn began with; a replica that lost it stops the turn with `ClaimLost`, which
the dispatcher logs, and says nothing in the conversation.

The check and the post are two steps: the check extends the lease, so only a pause in
that instant, longer than the lease, lets a post through after a take-over."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from memory.inbox import Inbox


class ClaimLost(Exception):
    """Another replica took the conversation over while this turn ran."""


@dataclass(frozen=True, slots=True)
class Claim:
    """The claim a turn runs under: its conversation, holder and fencing token."""

    inbox: Inbox
    conversation: str
    holder: str
    token: int


_running_under: ContextVar[Claim | None] = ContextVar("lorebot_claim", default=None)


@contextlib.contextmanager
def under(claim: Claim) -> Iterator[None]:
    """Run the block (a turn, and the tasks it starts) fenced on `claim`."""
    reset = _running_under.set(claim)
    try:
        yield
    finally:
        _running_under.reset(reset)


async def still_held() -> None:
    """Return when the running turn still holds its conversation (extending the claim),
    or when it runs under no claim (a slash command, a scheduled job); else raise
    `ClaimLost`."""
    claim = _running_under.get()
    if claim is None:
        return
    if not await claim.inbox.hold(claim.conversation, claim.holder, claim.token):
        raise ClaimLost(f"another replica took {claim.conversation} over")
