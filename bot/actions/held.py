"""Arguments that hold a secret, kept in this process's memory while their card waits.

The database gets the redacted form; the exact arguments wait here, each under a token of
its own (two identical calls on two cards never share one), until the card is decided.
After a restart they are gone, and the call is not run: the person asks again.
"""

from __future__ import annotations

import secrets
from typing import Any

LOST = (
    "its arguments held a secret, which lorebot keeps only in memory, and lorebot restarted since"
)


class HeldArguments:
    """Exact arguments by token, until they are taken once."""

    def __init__(self) -> None:
        self._held: dict[str, Any] = {}

    def keep(self, exact: Any) -> str:
        """Hold `exact`; the token to store in its place."""
        token = secrets.token_hex(16)
        self._held[token] = exact
        return token

    def take(self, token: object) -> Any | None:
        """The arguments held under `token`, once; None when they are gone (a restart)."""
        return self._held.pop(token, None) if isinstance(token, str) else None

    def __len__(self) -> int:
        return len(self._held)
