"""The audit of actions (MCP tool calls, skill scripts) and the tools allowed without a card.

Every action is one row from the moment it is asked for: who asked, the redacted
arguments, how it was approved, who decided, when it started, how long it took, and its
outcome. An action starts once, from pending; one that never ran is closed from pending
too. An allowance holds for the server as it was when granted. Arguments and output are
scrubbed of secrets before they are stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.clock import Clock, utc_now
from memory.policy.redaction import redact_value
from memory.policy.storable import storable_json
from memory.sql.session import Params, Row, Session, SqlDatabase, Statement, marks
from memory.stores.actions import (
    OUTCOMES,
    OUTPUT_MAX_CHARS,
    PENDING,
    RUNNING,
    Action,
    Allowance,
    AuditFilter,
    action_from_row,
)

ONE = "SELECT * FROM actions WHERE id = ?"


@dataclass(frozen=True, slots=True)
class SqlActionLog:
    """Records actions and allowances."""

    db: SqlDatabase
    clock: Clock = field(default=utc_now, kw_only=True)
    secrets: tuple[str, ...] = field(default=(), kw_only=True)  # configured values, never stored

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
        clean = redact_value(dict(arguments), known=self.secrets)
        async with self.db.transaction() as sql:
            new_id = await sql.insert(
                "INSERT INTO actions (proposal_id, tool, arguments_json, requester, "
                "channel_scope, conversation_json, approval, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    proposal_id,
                    tool,
                    _dump(clean),
                    requester,
                    channel_scope,
                    _dump(dict(conversation)),
                    approval,
                    self._now(),
                ),
            )
            return await self._one(sql, new_id)

    async def attach_proposal(self, action_id: int, proposal_id: int) -> None:
        await self.db.transact(
            [Statement("UPDATE actions SET proposal_id = ? WHERE id = ?", (proposal_id, action_id))]
        )

    async def start(self, action_id: int, decided_by: str | None = None) -> Action:
        """Mark an action as running (once: a second start raises `ValueError`)."""
        changed, action = await self._change(
            action_id,
            "UPDATE actions SET outcome = ?, started_at = ?, "
            "decided_by = coalesce(?, decided_by) WHERE id = ? AND outcome = ?",
            (RUNNING, self._now(), decided_by, action_id, PENDING),
        )
        if changed != 1:
            raise ValueError(f"action {action_id} was already started or decided")
        return action

    async def finish(self, action_id: int, outcome: str, output: str, duration_ms: int) -> Action:
        """Record how a run ended; the output is stored redacted and capped."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        kept = redact_value(output, known=self.secrets)[:OUTPUT_MAX_CHARS]
        _, action = await self._change(
            action_id,
            "UPDATE actions SET outcome = ?, output = ?, duration_ms = ? WHERE id = ?",
            (outcome, kept, duration_ms, action_id),
        )
        return action

    async def close(self, action_id: int, outcome: str, decided_by: str | None) -> Action:
        """An action that never ran: declined or expired."""
        _, action = await self._change(
            action_id,
            "UPDATE actions SET outcome = ?, decided_by = ? WHERE id = ? AND outcome = ?",
            (outcome, decided_by, action_id, PENDING),
        )
        return action

    async def fetch(self, action_id: int) -> Action:
        async with self.db.reading() as sql:
            return await self._one(sql, action_id)

    async def fetch_by_proposal(self, proposal_id: int) -> Action | None:
        found = await self._select("WHERE proposal_id = ?", (proposal_id,))
        return found[0] if found else None

    async def fetch_recent(self, limit: int = 50) -> list[Action]:
        return await self._select("ORDER BY id DESC LIMIT ?", (limit,))

    async def fetch_audit(
        self, shown: AuditFilter, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[Action], int]:
        where, params = _audit_where(shown, self.db.dialect.time)
        async with self.db.reading() as sql:
            found, count = await sql.batch(
                [
                    Statement(
                        f"SELECT * FROM actions WHERE {where} ORDER BY id DESC LIMIT ? OFFSET ?",
                        (*params, limit, offset),
                    ),
                    Statement(f"SELECT count(*) AS n FROM actions WHERE {where}", params),
                ]
            )
        read_time = self.db.dialect.read_time
        return [action_from_row(row, read_time) for row in found.rows], count.rows[0]["n"]

    async def fetch_in_channel(
        self, channel_scope: str, start: datetime, end: datetime
    ) -> list[Action]:
        """Actions asked for in one channel in [start, end), oldest first."""
        time = self.db.dialect.time
        return await self._select(
            "WHERE channel_scope = ? AND created_at >= ? AND created_at < ? ORDER BY id",
            (channel_scope, time(start), time(end)),
        )

    # --- allowances -----------------------------------------------------------------

    async def allow(
        self, channel_scope: str, tool: str, granted_by: str, server_id: str = ""
    ) -> Allowance:
        """Allow `tool` in the channel from now on, for the server as it is now
        (`server_id`); an allowance for the server as it was before is replaced."""
        _, found = await self.db.transact(
            [
                Statement(
                    "INSERT INTO action_allowances (channel_scope, tool, granted_by, "
                    "created_at, server_id) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (channel_scope, tool) DO UPDATE "
                    "SET granted_by = excluded.granted_by, created_at = excluded.created_at, "
                    "server_id = excluded.server_id "
                    "WHERE action_allowances.server_id != excluded.server_id",
                    (channel_scope, tool, granted_by, self._now(), server_id),
                ),
                Statement(
                    "SELECT * FROM action_allowances WHERE channel_scope = ? AND tool = ?",
                    (channel_scope, tool),
                ),
            ]
        )
        [row] = found.rows
        return self._allowance(row)

    async def allowed(self, channel_scope: str | None, tool: str, server_id: str = "") -> bool:
        """Whether `tool` of the server `server_id` runs without a card in the channel: an
        allowance granted while the server was another program allows nothing."""
        if channel_scope is None:
            return False
        async with self.db.reading() as sql:
            found = await sql.row(
                "SELECT 1 AS allowed FROM action_allowances WHERE channel_scope = ? "
                "AND tool = ? AND server_id = ?",
                (channel_scope, tool, server_id),
            )
        return found is not None

    async def fetch_allowances(self) -> list[Allowance]:
        async with self.db.reading() as sql:
            found = await sql.rows("SELECT * FROM action_allowances ORDER BY id")
        return [self._allowance(row) for row in found]

    async def revoke(self, allowance_id: int) -> bool:
        [deleted] = await self.db.transact(
            [Statement("DELETE FROM action_allowances WHERE id = ?", (allowance_id,))]
        )
        return deleted.changed == 1

    def _now(self) -> object:
        return self.db.dialect.time(self.clock())

    def _allowance(self, row: Row) -> Allowance:
        created_at = self.db.dialect.read_time(row["created_at"])
        assert created_at is not None
        return Allowance(
            row["id"],
            row["channel_scope"],
            row["tool"],
            row["granted_by"],
            created_at,
            row["server_id"],
        )

    async def _change(self, action_id: int, sql: str, params: Params) -> tuple[int, Action]:
        """Change one action and read it back, in one transaction sent at once: the number
        of rows changed (0 when the action was not in the state the change expects), and
        the action as it is now."""
        changed, found = await self.db.transact(
            [Statement(sql, params), Statement(ONE, (action_id,))]
        )
        return changed.changed, self._action(found.rows[0] if found.rows else None, action_id)

    async def _one(self, sql: Session, action_id: int) -> Action:
        return self._action(await sql.row(ONE, (action_id,)), action_id)

    def _action(self, row: Row | None, action_id: int) -> Action:
        if row is None:
            raise LookupError(f"there is no action {action_id}")
        return action_from_row(row, self.db.dialect.read_time)

    async def _select(self, where: str, params: Params) -> list[Action]:
        async with self.db.reading() as sql:
            found = await sql.rows(f"SELECT * FROM actions {where}", params)
        return [action_from_row(row, self.db.dialect.read_time) for row in found]


def _dump(value: Any) -> str:
    return storable_json(value, ensure_ascii=False, sort_keys=True)


def _audit_where(shown: AuditFilter, time: Callable[[datetime], object]) -> tuple[str, Params]:
    clauses: list[str] = []
    params: list[object] = []
    if shown.readers is not None:
        requester, channels = shown.readers
        seen = "requester = ?"
        params.append(requester)
        if channels:
            seen += f" OR channel_scope IN ({marks(len(channels))})"
            params += channels
        clauses.append(f"({seen})")
    if shown.server is not None:  # `_` and `%` in a server's name are only themselves
        clauses.append("substr(tool, 1, ?) = ?")
        params += [len(shown.server) + 2, f"{shown.server}__"]
    for column, value in (
        ("tool", shown.tool),
        ("outcome", shown.outcome),
        ("requester", shown.person),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if shown.since is not None:
        clauses.append("created_at >= ?")
        params.append(time(shown.since))
    if shown.until is not None:
        clauses.append("created_at < ?")
        params.append(time(shown.until))
    return " AND ".join(clauses) or "1 = 1", params
