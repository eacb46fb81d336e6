"""lorebot's error root and the split between errors meant for people and bugs."""

from __future__ import annotations

from adapters.errors import AdapterConfigError
from memory.errors import InvalidInput, StoreError


class LorebotError(Exception):
    """Root of the errors lorebot raises itself."""


class UserError(LorebotError):
    """A problem the person can fix; its message is shown to them as is."""


class ConfigError(UserError):
    """The configuration could not be loaded; the message names the key or file."""


def user_message(exc: BaseException) -> str | None:
    """The message to show a person for `exc`, or None when it is a bug to log."""
    if isinstance(exc, UserError | InvalidInput | StoreError | AdapterConfigError):
        return str(exc)
    return None
