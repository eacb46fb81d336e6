"""Logging setup: text or JSON lines, and a filter that scrubs secrets from every record."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from datetime import UTC, datetime

from memory.redaction import redact

_HANDLER_NAME = "lorebot"


class SecretFilter(logging.Filter):
    """Replaces configured secrets and anything that looks like a credential."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = tuple({s for s in secrets if len(s) >= 6})

    def scrub(self, text: str) -> str:
        return redact(text, self.secrets)

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
