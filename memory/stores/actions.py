"""The audit of actions (MCP tool calls, skill scripts) and the tools allowed without a card.

Every action is one record from the moment it is asked for: who asked, the redacted
arguments, how it was approved, who decided, when it started, how long it took, and its
outcome. Arguments and output are scrubbed of secrets before they are stored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

_log = logging.getLogger(__name__)

# How an action came to run, or not.
BY_CARD = "card"
BY_ALLOW_LIST = "allow list"
BY_ALLOWANCE = "allowance"
BY_TRUST = "trusted read-only"
# An action is pending until it starts (once) and is running until it ends in one of
# OUTCOMES; one that never runs goes from pending to declined or expired.
PENDING = "pending"
RUNNING = "running"
OUTCOMES = ("ok", "error", "unknown", "declined", "expired")
OUTPUT_MAX_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Action:
    """One action and what became of it."""

    id: int
    proposal_id: int | None
    tool: str
    arguments: dict[str, Any]
    requester: str
    channel_scope: str | None
    conversation: dict[str, Any]
    approval: str
    decided_by: str | None
    outcome: str
    output: str
    started_at: datetime | None
    duration_ms: int | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Allowance:
    """A tool an admin allowed to run without a card in one channel."""

    id: int
    channel_scope: str
    tool: str
    granted_by: str
    created_at: datetime
    server_id: str = ""  # the server's identity when it was granted


def action_from_row(row: Any, time: Callable[[Any], datetime | None]) -> Action:
    """An `actions` row as an `Action`; `time` reads the engine's time columns."""
    created_at = time(row["created_at"])
    assert created_at is not None
    return Action(
        id=row["id"],
        proposal_id=row["proposal_id"],
        tool=row["tool"],
        arguments=json.loads(row["arguments_json"]),
        requester=row["requester"],
        channel_scope=row["channel_scope"],
        conversation=json.loads(row["conversation_json"]),
        approval=row["approval"],
        decided_by=row["decided_by"],
        outcome=row["outcome"],
        output=row["output"],
        started_at=time(row["started_at"]),
        duration_ms=row["duration_ms"],
        created_at=created_at,
    )


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Which actions the audit shows: each field narrows it (None: any). `readers` keeps
    to the actions a person may see: those they asked for (`requester`) and those asked in
    the channels they are in (`channels`); None: every action (an admin)."""

    server: str | None = None  # a tool of this server (`server__tool`)
    tool: str | None = None
    outcome: str | None = None
    person: str | None = None  # who asked
    since: datetime | None = None
    until: datetime | None = None
    readers: tuple[str, tuple[str, ...]] | None = None


class ActionLog(Protocol):
    """The audit of actions and the allowances of tools per channel."""

    async def record(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        requester: str,
        channel_scope: str | None,
        conversation: Mapping[str, Any],
        approval: str,
        proposal_id: int | None = None,
    ) -> Action:
        """A new action, before it runs or is decided; its arguments are stored redacted."""
        ...

    async def attach_proposal(self, action_id: int, proposal_id: int) -> None: ...

    async def start(self, action_id: int, decided_by: str | None = None) -> Action:
        """Mark an action as running (once: a second start raises `ValueError`)."""
        ...

    async def finish(self, action_id: int, outcome: str, output: str, duration_ms: int) -> Action:
        """Record how a run ended; the output is stored redacted and capped."""
        ...

    async def close(self, action_id: int, outcome: str, decided_by: str | None) -> Action:
        """An action that never ran: declined or expired."""
        ...

    async def fetch(self, action_id: int) -> Action: ...

    async def fetch_by_proposal(self, proposal_id: int) -> Action | None: ...

    async def fetch_recent(self, limit: int = 50) -> list[Action]: ...

    async def fetch_audit(
        self, shown: AuditFilter, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[Action], int]:
        """The actions `shown` admits, newest first, a page at a time, and how many."""
        ...

    async def fetch_in_channel(
        self, channel_scope: str, start: datetime, end: datetime
    ) -> list[Action]:
        """Actions asked for in one channel in [start, end), oldest first."""
        ...

    async def allow(
        self, channel_scope: str, tool: str, granted_by: str, server_id: str = ""
    ) -> Allowance:
        """Allow `tool` in the channel from now on, for the server as it is now
        (`server_id`); an allowance for the server as it was before is replaced."""
        ...

    async def allowed(self, channel_scope: str | None, tool: str, server_id: str = "") -> bool:
        """Whether `tool` of the server `server_id` runs without a card in the channel: an
        allowance granted while the server was another program allows nothing."""
        ...

    async def fetch_allowances(self) -> list[Allowance]: ...

    async def revoke(self, allowance_id: int) -> bool: ...


async def finish_run(
    log: ActionLog, action_id: int, outcome: str, output: str, duration_ms: int
) -> Action:
    """`log.finish`, and when its output cannot be stored, the outcome still is, with a
    note in the output's place: a run that ended never stays `running` in the audit."""
    try:
        return await log.finish(action_id, outcome, output, duration_ms)
    except Exception as exc:
        _log.exception("the output of action %d could not be recorded", action_id)
        note = f"(the output could not be recorded: {type(exc).__name__})"
        return await log.finish(action_id, outcome, note, duration_ms)
