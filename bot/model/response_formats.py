"""How each OpenAI-compatible server takes a JSON schema for structured output, learnt once
and kept in `model-servers.json` beside the SQLite database (lorebot's state folder), so a
new process does not ask again in the way an earlier one was refused.

The API's own `json_schema` response format is tried first; a server that refuses it
(llama.cpp's answers 500) is asked with `json_object` and a `schema`, llama.cpp's way. What
worked is kept per server: its base URL, the model, and what `/v1/models` says of the server
(`server_of`), so a different server at the same address is asked anew. A file rather than
a table: it is a cache whose loss costs one refused request, `doctor` reads it without
opening the database, and it is written only when what a server takes changes.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_log = logging.getLogger(__name__)

FILE_NAME = "model-servers.json"
FORMAT = 1
# The ways of sending a schema, in the order they are tried.
STYLES = ("json_schema", "json_object")
# What of a `/v1/models` entry tells servers apart: not `created`, which some set to the
# time of asking, nor vLLM's `permission`, whose ids are new each time.
_SERVER_FIELDS = ("owned_by", "root", "parent", "max_model_len", "meta")


def server_of(entry: Mapping[str, Any]) -> str:
    """What a `/v1/models` entry says of the server behind it, as one text."""
    said = {key: entry[key] for key in _SERVER_FIELDS if entry.get(key) is not None}
    return json.dumps(said, sort_keys=True, default=str)


def other_style(style: str) -> str:
    """The way of sending a schema to try when `style` was refused."""
    return next(s for s in STYLES if s != style)


@dataclass(frozen=True, slots=True)
class Learnt:
    """What a server took for a schema: `style`, after refusing `refused` (None when it
    took the first it was offered); `server` is `server_of` its model when known."""

    style: str
    refused: str | None = None
    server: str | None = None

    def describe(self) -> str:
        return f"{self.style} ({self.refused} refused)" if self.refused else self.style


class ResponseFormats:
    """The `Learnt` of each server and model, read from and written to one JSON file (none:
    kept in memory only). A file that cannot be read or written only costs asking again."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._known: dict[tuple[str, str], Learnt] | None = None

    @classmethod
    def beside(cls, database: Path) -> ResponseFormats:
        """The file in the SQLite database's folder; in memory for an in-memory database."""
        return cls(None if str(database) == ":memory:" else database.parent / FILE_NAME)

    def get(self, url: str, model: str, server: str | None = None) -> Learnt | None:
        """What the server at `url` took for `model`, unless `server` says it is another
        server than the one that was learnt from."""
        if self._known is None:
            self._known = self._read()
        learnt = self._known.get((url, model))
        if learnt is None or server is None or learnt.server is None:
            return learnt
        return learnt if server == learnt.server else None  # another server answers there

    def remember(self, url: str, model: str, learnt: Learnt) -> None:
        """Keep what the server took, for this process and the next ones."""
        known = self._read()  # as other processes left it
        self._known = {**known, (url, model): learnt}
        if known.get((url, model)) != learnt:
            self._write(self._known)

    def _read(self) -> dict[tuple[str, str], Learnt]:
        if self.path is None:
            return dict(self._known or {})
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            if stored.get("format") != FORMAT:
                return {}
            return {
                (entry["url"], entry["model"]): Learnt(
                    entry["style"], entry.get("refused"), entry.get("server")
                )
                for entry in stored["servers"]
                if entry.get("style") in STYLES
            }
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            _log.info("%s cannot be read (%s): asking the servers again", self.path, exc)
            return {}

    def _write(self, known: Mapping[tuple[str, str], Learnt]) -> None:
        if self.path is None:
            return
        servers = [
            {"url": url, "model": model, **asdict(learnt)}
            for (url, model), learnt in sorted(known.items())
        ]
        text = json.dumps({"format": FORMAT, "servers": servers}, indent=2)
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=self.path.parent, prefix=".model-", delete=False
            ) as handle:
                handle.write(text)
            os.replace(handle.name, self.path)
        except OSError as exc:
            _log.info("%s not written (%s): the next process asks again", self.path, exc)
