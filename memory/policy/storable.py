"""Text as every engine keeps it: a NUL character (U+0000) and a lone surrogate (half of a
UTF-16 pair, as a cut emoji leaves) each become U+FFFD, the replacement character.

PostgreSQL's text and jsonb cannot hold a NUL, and no UTF-8 can hold a lone surrogate, so
both engines store either the same way: U+FFFD rather than nothing, so a reader sees that
something was there (as decoders show a byte they cannot read), as imports already did for
a lone surrogate. Each engine's driver passes every text parameter through `storable_text`
(`memory/sqlite/driver.py`, `memory/postgres/text_dumpers.py`), and the stores encode JSON
with `storable_json`, since `json.dumps` writes a NUL as the escape `\\u0000`.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

STAND_IN = "\ufffd"
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` with each NUL and lone surrogate replaced by U+FFFD (a high-low pair is
    joined into its character); `text` itself when it holds neither."""
    if "\x00" in text:
        text = text.replace("\x00", STAND_IN)
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def storable_json(
    value: object, *, ensure_ascii: bool = True, sort_keys: bool = False, compact: bool = False
) -> str:
    """`value` as JSON (`json.dumps` with these options; `compact` drops the spaces after
    separators) with every string in it, keys too, storable."""
    encoder = _encoder(ensure_ascii, sort_keys, compact)
    text = encoder.encode(value)
    # Escapes of a NUL or of a surrogate (ensure_ascii), or a raw surrogate (without it):
    # only then is the value walked and encoded again.
    if "\\u0000" in text or "\\ud" in text or storable_text(text) is not text:
        text = encoder.encode(_storable_value(value))
    return text


# The escape of a NUL, not of a backslash followed by "u0000": after an even number of them.
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def storable_json_text(text: str) -> str:
    """JSON text that may come from before this rule (a database being copied) as
    `storable_json` would write it: each escaped NUL the escape of U+FFFD."""
    if "\\u0000" not in text:
        return text
    return _NUL_ESCAPE.sub(r"\1\\ufffd", text)


@functools.cache
def _encoder(ensure_ascii: bool, sort_keys: bool, compact: bool) -> json.JSONEncoder:
    """One encoder per set of options: `json.dumps` with options builds one per call."""
    separators = (",", ":") if compact else None
    return json.JSONEncoder(ensure_ascii=ensure_ascii, sort_keys=sort_keys, separators=separators)


def _storable_value(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {_storable_value(k): _storable_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_storable_value(item) for item in value]
    return value
