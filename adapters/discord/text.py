"""Text at the Discord edge: mention markup and commands in, message-size limits out.

Pure functions on strings and id-to-name mappings, so they are tested without a client.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

MAX_MESSAGE_CHARS = 2000
EMPTY_REPLY = "…"  # Discord refuses a message without content

_USER = re.compile(r"<@!?(\d+)>")
_ROLE = re.compile(r"<@&(\d+)>")
_CHANNEL = re.compile(r"<#(\d+)>")
_CUSTOM_EMOJI = re.compile(r"<a?:(\w+):\d+>")

_Replace = Callable[[re.Match[str]], str]


def plain_text(
    content: str,
    *,
    remove_users: Collection[int] = (),
    remove_roles: Collection[int] = (),
    users: Mapping[int, str] | None = None,
    roles: Mapping[int, str] | None = None,
    channels: Mapping[int, str] | None = None,
) -> str:
    """What a person wrote, as the core should read it.

    Mentions of the bot itself (`<@id>`, `<@!id>`, and its managed role) are removed together
    with a comma or colon right after them; other user, role and channel mentions become
    `@Display Name`, `@role` and `#channel`; custom emoji become `:name:`.
    """
    users = users or {}
    roles = roles or {}
    channels = channels or {}

    def drop_or_name(names: Mapping[int, str], dropped: Collection[int], unknown: str) -> _Replace:
        def sub(match: re.Match[str]) -> str:
            ident = int(match.group(1))
            if ident in dropped:
                return "\0"
            return "@" + names.get(ident, unknown)

        return sub

    text = _USER.sub(drop_or_name(users, remove_users, "unknown-user"), content.replace("\0", ""))
    text = _ROLE.sub(drop_or_name(roles, remove_roles, "unknown-role"), text)
    text = _CHANNEL.sub(lambda m: "#" + channels.get(int(m.group(1)), "unknown-channel"), text)
    text = _CUSTOM_EMOJI.sub(r":\1:", text)
    # A removed mention takes the punctuation and spaces after it ("@lorebot, remember …").
    text = re.sub(r"\0[,:]?[ \t]*", "", text)
    return text.strip()


def command_text(name: str, value: str | None = None) -> str:
    """What `/lorebot <name> <value>` asks for, as the text the core reads, e.g. "recall
    deploys" or "undo"."""
    value = (value or "").strip()
    return f"{name} {value}" if value else name


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` shortened to `limit` characters with an ellipsis, so one message is never
    refused for its length; an empty text becomes EMPTY_REPLY."""
    text = text.strip() or EMPTY_REPLY
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
