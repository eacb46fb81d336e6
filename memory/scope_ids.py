"""Platform ids as memory scopes write them: any id fits, escaped, and Slack and Discord ids
stay as they are. The core makes scopes with it (`bot/context/scopes.py`); it is kept apart from
`memory.types` so that costs no more of memory than this."""

from __future__ import annotations

import string
from urllib.parse import unquote

from memory.errors import InvalidInput

SCOPE_ID_MAX_CHARS = 255
_ID_KEPT = frozenset(string.ascii_letters + string.digits + "_.@-")


def scope_id(raw: str) -> str:
    """A platform's id as a scope writes it: each character other than ASCII letters,
    digits and `_.@-` becomes `%XX` of its UTF-8 bytes (`%` too), so any id fits and
    Slack and Discord ids stay as they are. Raises `InvalidInput` for an empty id or one
    longer than `SCOPE_ID_MAX_CHARS` once written so."""
    if not raw:
        raise InvalidInput("a memory scope needs a platform id, and this one is empty")
    escaped = "".join(c if c in _ID_KEPT else _percent(c) for c in raw)
    if set(escaped) == {"."}:  # `.` and `..` are path steps in exported folders
        escaped = escaped.replace(".", "%2E")
    if len(escaped) > SCOPE_ID_MAX_CHARS:
        raise InvalidInput(
            f"the platform id {raw[:40]!r}… is too long for a memory scope: "
            f"{len(escaped)} characters once written with %XX escapes, at most "
            f"{SCOPE_ID_MAX_CHARS}"
        )
    return escaped


def _percent(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def raw_id(escaped: str) -> str:
    """The platform's id a scope id stands for: the inverse of `scope_id`."""
    try:
        return unquote(escaped, errors="strict")
    except UnicodeDecodeError:
        raise InvalidInput(f"{escaped!r} has %XX escapes that are not UTF-8") from None
