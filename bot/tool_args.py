"""The coercions small models need before their tool arguments are validated.

Local models often wrap strings in extra quotes, send the arguments object as a JSON
string, or write numbers as strings. Those are repaired here, before validation; whatever
still fails goes back to the model as an error it can correct.
"""

from __future__ import annotations

import json
from typing import Any

# No tool takes nested arguments; deeper JSON is refused before anything recurses into it.
MAX_ARGUMENT_DEPTH = 32
TOO_DEEP = f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"


class ToolArgumentError(ValueError):
    """Arguments the model must correct; the message is written for the model."""


def _unquote(value: Any) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        while len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'`":
            stripped = stripped[1:-1].strip()
        return stripped
    return value


def exceeds_depth(value: Any, limit: int) -> bool:
    """Whether lists and objects in `value` nest more than `limit` levels; iterative, so any
    depth is measured without recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


def _checked(key: str, value: Any) -> Any:
    if "\x00" in key or (isinstance(value, str) and "\x00" in value):
        raise ToolArgumentError(f"argument {key!r} contains a NUL character; send plain text")
    return value


def _decode(text: str) -> Any:
    """Arguments the model sent as a JSON string."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ToolArgumentError(TOO_DEEP) from None


def coerce_arguments(raw: Any) -> dict[str, Any]:
    """Repair the known quirks: a JSON string instead of an object, and quote-wrapped
    strings. Numbers given as strings are accepted by pydantic's lax mode. NUL characters
    and deep nesting are refused: no tool takes them, and paths and C libraries fail on them."""
    if isinstance(raw, str):
        raw = _decode(raw)
    if exceeds_depth(raw, MAX_ARGUMENT_DEPTH):
        raise ToolArgumentError(TOO_DEEP)
    if not isinstance(raw, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    return {str(key): _checked(str(key), _unquote(value)) for key, value in raw.items()}
