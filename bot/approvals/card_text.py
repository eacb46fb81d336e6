"""What a card shows of a call: every character that will be sent, none interpreted.

A card is read by a person deciding whether something runs, so nothing in the model's
arguments or a server's words may change how the card reads: invisible and
direction-changing characters are shown as `\\uXXXX` escapes, and arguments sit in a code
block they cannot close (a backtick inside is shown as `\\u0060`, which is the same JSON).
Neither Slack's mrkdwn nor Discord's Markdown honours a longer fence, so escaping the
backtick is what keeps the block closed on both. Inside the block neither platform turns
anything into a link, a mention or a spoiler.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from memory.policy.redaction import redact_value

# Categories never shown as themselves: controls, format characters (zero-width, bidi),
# surrogates, private use, unassigned, and line or paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_BACKTICK = "`"


def _hidden(char: str) -> bool:
    if char in "\n\t":
        return False
    category = unicodedata.category(char)
    # Spaces other than the plain one look like it: show which they are.
    return category in _HIDDEN_CATEGORIES or (category == "Zs" and char != " ")


def _escape(char: str) -> str:
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def visible(text: str) -> str:
    """`text` with every invisible, direction-changing or look-alike space character shown
    as an escape, so what a person reads is what is there."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(c) if _hidden(c) else c for c in text)


def inline(text: str) -> str:
    """`text` for inline code on a card: visible, on one line, with no backtick to end it."""
    return code_line(text).replace("\n", "\\n").replace("\t", "\\t")


def _json_escape_hidden(text: str) -> str:
    # Every character here sits inside a JSON string (json.dumps escaped the controls), so
    # a JSON `\uXXXX` escape is the same value, spelled out.
    return "".join(_json_char(c) for c in text)


def _json_char(char: str) -> str:
    if char == _BACKTICK:
        return "\\u0060"
    if not _hidden(char):
        return char
    encoded = json.dumps(char)  # a non-BMP character becomes its surrogate pair
    return encoded[1:-1] if encoded.startswith('"\\u') else _escape(char)


def format_arguments(arguments: Any, known: Iterable[str] = ()) -> str:
    """The arguments as JSON for a card: complete, secrets redacted, every character shown."""
    text = json.dumps(
        redact_value(arguments, known=tuple(known)), indent=2, ensure_ascii=False, sort_keys=True
    )
    return _json_escape_hidden(text)


def code_line(text: str) -> str:
    """One line of a file for a code block on a card: visible, no backtick to end it."""
    return visible(text).replace(_BACKTICK, "\\u0060")


def code_block(text: str) -> str:
    """`text` (already made visible, with no backtick) in a code block."""
    return f"```\n{text}\n```"


_TOOL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def valid_tool_name(name: str) -> bool:
    """Whether a server's tool name is one a card can show plainly: letters, digits, `_`,
    `.` and `-`, at most 64, no `__` (lorebot's own separator)."""
    return _TOOL_NAME.fullmatch(name) is not None and "__" not in name
