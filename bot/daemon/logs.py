"""Logging setup: text or JSON lines, and a filter that scrubs secrets from every record."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime

from memory.policy.redaction import mask_spans, normalise, secret_spans

_HANDLER_NAME = "lorebot"

# Libraries log what they got as it was written: discord.py the repr() of each gateway
# event, aiosqlite that of each statement's parameters, slack_sdk that of each raw Socket
# Mode frame (JSON text, in which Slack escapes slashes). A credential in there is escaped
# once or more (`\\"password\\": \\"…`, `K7MDENG\\/bPx…`), and the patterns do not match
# across the escapes: the line is also read with them undone, layer by layer, and what is
# found there is masked where it is written.
_ESCAPE = re.compile(
    r"\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)|&(?:amp|lt|gt|quot);", re.DOTALL
)
_CONTROL = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "0": "\0"}
_ENTITY = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"'}
_MAX_LAYERS = 3


def _decoded(escape: str) -> str:
    """The text an escape stands for, normalised as the patterns read text."""
    if escape[0] == "&":
        return _ENTITY[escape]
    kind = escape[1]
    if kind in "uUx" and len(escape) > 2:
        code = int(escape[2:], 16)
        return normalise(chr(code)) if code <= 0x10FFFF else escape
    return _CONTROL.get(kind, kind)


def _unescaped(text: str, starts: list[int], ends: list[int]) -> tuple[str, list[int], list[int]]:
    """`text` with one layer of escapes undone; for each of its characters, where in the
    line it was written, from `starts` and `ends` (those of `text`'s characters)."""
    pieces: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    position = 0
    for match in _ESCAPE.finditer(text):
        start, end = match.span()
        char = _decoded(match.group())
        pieces += [text[position:start], char]
        new_starts += starts[position:start] + [starts[start]] * len(char)
        new_ends += ends[position:start] + [ends[end - 1]] * len(char)
        position = end
    pieces.append(text[position:])
    return "".join(pieces), new_starts + starts[position:], new_ends + ends[position:]


def escaped_spans(clean: str, known: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Where credentials are in `clean` (a normalised line) once its escapes are undone:
    spans of `clean` covering each, escapes included."""
    found: list[tuple[int, int]] = []
    view, starts, ends = clean, list(range(len(clean))), list(range(1, len(clean) + 1))
    for _ in range(_MAX_LAYERS):
        if _ESCAPE.search(view) is None:
            break
        view, starts, ends = _unescaped(view, starts, ends)
        found += [(starts[a], ends[b - 1]) for a, b in secret_spans(view, known) if b > a]
    return found


class SecretFilter(logging.Filter):
    """Replaces configured secrets and anything that looks like a credential, also where a
    library logged it escaped."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = tuple({s for s in secrets if len(s) >= 6})

    def scrub(self, text: str) -> str:
        clean = normalise(text)
        spans = secret_spans(clean, self.secrets) + escaped_spans(clean, self.secrets)
        return mask_spans(clean, spans) if spans else text

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = self.scrub(message), None
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_text or record.exc_info:
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)  # type: ignore[arg-type]
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: int | str, log_format: str, secrets: Iterable[str]) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(SecretFilter(secrets))
    handler.set_name(_HANDLER_NAME)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
