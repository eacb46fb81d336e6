"""Captured write actions (L1): one per distinct action, secrets redacted. Pattern
extraction (L2) reads them grouped by action."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory.policy.redaction import redact_value

WRITE_VERBS = (
    "register",
    "deploy",
    "push",
    "save",
    "destroy",
    "write",
    "record",
    "emit",
    "export",
    "ingest",
    "stop",
    "create",
    "update",
    "delete",
    "exec",
    "forget",
    "load",
)


def is_write_action(name: str) -> bool:
    """Whether a tool or action name says it changes something (a write verb in its name)."""
    parts = name.lower().replace("-", "_").split("_")
    return any(verb in parts for verb in WRITE_VERBS)


def redacted_arguments(
    action: str, arguments: Mapping[str, Any], secrets: Iterable[str]
) -> tuple[dict[str, Any], str]:
    """An action's arguments with secrets redacted, and the content hash of the action and
    those arguments, which keeps one row per distinct action."""
    clean: dict[str, Any] = redact_value(dict(arguments), known=tuple(secrets))
    canonical = json.dumps({"action": action, "arguments": clean}, sort_keys=True)
    return clean, hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CapturedEvent:
    id: int
    action: str
    arguments: dict[str, Any]
    outcome: str
    conversation: dict[str, Any]
    channel_scope: str | None
    person: str
    created_at: datetime


class EventLog(Protocol):
    """Stores and reads captured actions."""

    async def capture(
        self,
        action: str,
        arguments: Mapping[str, Any],
        *,
        outcome: str,
        conversation: Mapping[str, Any],
        channel_scope: str | None,
        person: str,
    ) -> bool:
        """Store one successful action; False when the same action was already stored."""
        ...

    async def fetch_since(self, start: datetime) -> list[CapturedEvent]: ...

    async def has_pattern(self, action: str, channel_scope: str) -> bool: ...

    async def mark_pattern(self, action: str, channel_scope: str, proposal_id: int) -> None: ...
