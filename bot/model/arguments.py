"""The model's JSON made valid, and the coercions small models need before their tool
arguments are validated.

What the model writes is an edge like a platform's payload: its JSON may hold a lone
surrogate (a `\\ud800` escape) that no UTF-8 encoder takes, and numbers no JSON encoder
writes back (`NaN`, `Infinity`, `1e400`). Text is made valid here (U+FFFD for a lone
surrogate); such a number in tool arguments is an error for the model to correct.

Local models also often wrap strings in extra quotes, send the arguments object as a JSON
string, or write numbers as strings. Those are repaired here, before validation; whatever
still fails goes back to the model as an error it can correct.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any

# No tool takes nested arguments; deeper JSON is refused before anything recurses into it.
MAX_ARGUMENT_DEPTH = 32
TOO_DEEP = f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"
# Any surrogate code point in a str is a lone one: JSON decoding joins escaped pairs.
_SURROGATE = re.compile("[\ud800-\udfff]")
_FLOAT_MAX = int(sys.float_info.max)


class ToolArgumentError(ValueError):
    """Arguments the model must correct; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class BadNumber:
    """A number of the model's JSON that cannot be passed on, as the model wrote it: NaN,
    Infinity, or one beyond the range of a float (`1e400`)."""

    text: str

    def __str__(self) -> str:
        return self.text if len(self.text) <= 24 else f"{self.text[:24]}…"


def valid_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, so it encodes as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def _float(text: str) -> float | BadNumber:
    number = float(text)
    return number if math.isfinite(number) else BadNumber(text)


def _int(text: str) -> int | BadNumber:
    if len(text) > 310:  # past any float, and before int() refuses its digits
        return BadNumber(text)
    number = int(text)
    return number if abs(number) <= _FLOAT_MAX else BadNumber(text)


def read_json(text: str) -> Any:
    """`text` decoded as JSON, with each number that cannot be passed on read as a
    `BadNumber` rather than a float that would fail `json.dumps(allow_nan=False)`."""
    return json.loads(text, parse_float=_float, parse_int=_int, parse_constant=BadNumber)


def _bad_number(value: Any) -> str | None:
    """How the model wrote `value`, when it is a number that cannot be passed on."""
    if isinstance(value, BadNumber):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _FLOAT_MAX:
        return "a number beyond the range of a float"
    return None


def valid_arguments(value: Any, path: str = "") -> Any:
    """`value` with lone surrogates replaced in every key and string; `ToolArgumentError`
    for a number that cannot be passed on. It recurses: check the depth first."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(str(k)): valid_arguments(v, _at(path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_arguments(item, _at(path, n)) for n, item in enumerate(value)]
    if (written := _bad_number(value)) is not None:
        where = f"argument {valid_text(path)!r}" if path else "the arguments"
        raise ToolArgumentError(
            f"{where} is {written}, out of range or not a number; send a finite number"
        )
    return value


def _at(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


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
        return read_json(text)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ToolArgumentError(TOO_DEEP) from None


def coerce_arguments(raw: Any) -> dict[str, Any]:
    """Repair the known quirks: a JSON string instead of an object, and quote-wrapped
    strings. Numbers given as strings are accepted by pydantic's lax mode. Lone surrogates
    become U+FFFD; numbers JSON cannot carry, NUL characters and deep nesting are refused:
    no tool takes them, and encoders, paths and C libraries fail on them."""
    if isinstance(raw, str):
        raw = _decode(raw)
    if exceeds_depth(raw, MAX_ARGUMENT_DEPTH):
        raise ToolArgumentError(TOO_DEEP)
    raw = valid_arguments(raw)
    if not isinstance(raw, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    return {str(key): _checked(str(key), _unquote(value)) for key, value in raw.items()}
