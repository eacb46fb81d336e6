"""The web console's sign-ins: one-time links and sessions, kept in the database so that
any replica accepts them. A token is given to the person once and kept only as its SHA-256,
so reading the database signs nobody in."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

LINK_TTL = timedelta(minutes=10)
# How long an expired session or link stays, for a look at sign-ins: past a session's
# longest life (`console.session_hours`, 30 days at most), so an ended one is gone too.
KEEP_ENDED = timedelta(days=31)

LinkState = Literal["ok", "used", "expired", "unknown"]


def token_hash(token: str) -> str:
    # A cookie's bytes that are not UTF-8 arrive as surrogates: hashed as they came.
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """A person signed in: lorebot's user id for them (`user:slack/U1`), how they signed
    in, the token their forms carry, and the channel and team scopes their platform said
    they are in when they signed in."""

    user_id: str
    via: str
    csrf: str
    scopes: tuple[str, ...]
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class LinkUse:
    """What using a one-time link gave: its state, and whom it signs in when "ok"."""

    state: LinkState
    user_id: str = ""


class ConsoleSignIns(Protocol):
    """The `console_links` and `console_sessions` tables."""

    async def create_link(self, token: str, user_id: str, ttl: timedelta = LINK_TTL) -> datetime:
        """Keep a one-time link for `user_id`; when it expires."""
        ...

    async def use_link(self, token: str) -> LinkUse:
        """Use a link once: "ok" the first time within its time, else why not."""
        ...

    async def open_session(
        self,
        token: str,
        user_id: str,
        *,
        via: str,
        csrf: str,
        scopes: tuple[str, ...],
        ttl: timedelta,
    ) -> ConsoleSession: ...

    async def fetch_session(self, token: str) -> ConsoleSession | None:
        """The session of `token` while it is open (not ended, not expired), else None."""
        ...

    async def end_session(self, token: str) -> None: ...

    async def purge(self) -> int:
        """Delete the links and sessions that expired over `KEEP_ENDED` ago."""
        ...
