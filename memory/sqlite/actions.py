"""The audit of actions (MCP tool calls, skill scripts) and the tools allowed without a card.

Every action is one row from the moment it is asked for: who asked, the redacted
arguments, how it was approved, who decided, when it started, how long it took, and its
outcome. Arguments and output are scrubbed of secrets before they are stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from memory.actions import (
    OUTCOMES,
    OUTPUT_MAX_CHARS,
    Action,
    Allowance,
    action_from_row,
)
from memory.clock import Clock, utc_now
from memory.redaction import redact_value
from memory.sqlite.database import SqliteDatabase, from_db_time, to_db_time
from memory.storable import storable_json


class SqliteActionLog:
    """Records actions and allowances."""

    def __init__(
        self, db: SqliteDatabase, *, clock: Clock = utc_now, secrets: Iterable[str] = ()
    ) -> None:
        self.db = db
        self.clock = clock
        self.secrets = tuple(secrets)  # configured secret values, never stored

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
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO actions (proposal_id, tool, arguments_json, requester, "
                "channel_scope, conversation_json, approval, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    proposal_id, tool, _dump(self._redacted(arguments)), requester,
                    channel_scope, _dump(dict(conversation)), approval,
                    to_db_time(self.clock()),
                ),
            )  # fmt: skip
        assert cursor.lastrowid is not None
        return await self.fetch(cursor.lastrowid)

    def _redacted(self, arguments: Mapping[str, Any]) -> Any:
        return redact_value(dict(arguments), known=self.secrets)

    async def attach_proposal(self, action_id: int, proposal_id: int) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE actions SET proposal_id = ? WHERE id = ?", (proposal_id, action_id)
            )

    async def start(self, action_id: int, decided_by: str | None = None) -> Action:
        """Mark an action as running (once: a second start raises `ValueError`)."""
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE actions SET outcome = 'running', started_at = ?, "
                "decided_by = coalesce(?, decided_by) WHERE id = ? AND outcome = 'pending'",
                (to_db_time(self.clock()), decided_by, action_id),
            )
        if cursor.rowcount != 1:
            raise ValueError(f"action {action_id} was already started or decided")
        return await self.fetch(action_id)

    async def finish(self, action_id: int, outcome: str, output: str, duration_ms: int) -> Action:
        """Record how a run ended; the output is stored redacted and capped."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE actions SET outcome = ?, output = ?, duration_ms = ? WHERE id = ?",
                (
                    outcome,
                    redact_value(output, known=self.secrets)[:OUTPUT_MAX_CHARS],
                    duration_ms,
                    action_id,
                ),
            )
        return await self.fetch(action_id)

    async def close(self, action_id: int, outcome: str, decided_by: str | None) -> Action:
        """An action that never ran: declined or expired."""
        async with self.db.write() as conn:
            await conn.execute(
                "UPDATE actions SET outcome = ?, decided_by = ? WHERE id = ? "
                "AND outcome = 'pending'",
                (outcome, decided_by, action_id),
            )
        return await self.fetch(action_id)

    async def fetch(self, action_id: int) -> Action:
        found = await self._select("WHERE id = ?", (action_id,))
        if not found:
            raise LookupError(f"there is no action {action_id}")
        return found[0]

    async def fetch_by_proposal(self, proposal_id: int) -> Action | None:
        found = await self._select("WHERE proposal_id = ?", (proposal_id,))
        return found[0] if found else None

    async def fetch_recent(self, limit: int = 50) -> list[Action]:
        return await self._select("ORDER BY id DESC LIMIT ?", (limit,))

    async def fetch_in_channel(
        self, channel_scope: str, start: datetime, end: datetime
    ) -> list[Action]:
        """Actions asked for in one channel in [start, end), oldest first."""
        return await self._select(
            "WHERE channel_scope = ? AND created_at >= ? AND created_at < ? ORDER BY id",
            (channel_scope, to_db_time(start), to_db_time(end)),
        )

    # --- allowances -----------------------------------------------------------------

    async def allow(
        self, channel_scope: str, tool: str, granted_by: str, server_id: str = ""
    ) -> Allowance:
        """Allow `tool` in the channel from now on, for the server as it is now
        (`server_id`); an allowance for the server as it was before is replaced."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO action_allowances (channel_scope, tool, granted_by, created_at, "
                "server_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (channel_scope, tool) DO UPDATE "
                "SET granted_by = excluded.granted_by, created_at = excluded.created_at, "
                "server_id = excluded.server_id WHERE server_id != excluded.server_id",
                (channel_scope, tool, granted_by, to_db_time(self.clock()), server_id),
            )
        [found] = [a for a in await self.fetch_allowances() if (a.channel_scope, a.tool) == (
            channel_scope, tool)]  # fmt: skip
        return found

    async def allowed(self, channel_scope: str | None, tool: str, server_id: str = "") -> bool:
        """Whether `tool` of the server `server_id` runs without a card in the channel: an
        allowance granted while the server was another program allows nothing."""
        if channel_scope is None:
            return False
        found = await self.db.scalar(
            "SELECT 1 FROM action_allowances WHERE channel_scope = ? AND tool = ? "
            "AND server_id = ?",
            (channel_scope, tool, server_id),
        )
        return found is not None

    async def fetch_allowances(self) -> list[Allowance]:
        async with self.db.conn.execute("SELECT * FROM action_allowances ORDER BY id") as cursor:
            rows = await cursor.fetchall()
        return [
            Allowance(r["id"], r["channel_scope"], r["tool"], r["granted_by"],
                      _time(r["created_at"]), r["server_id"])
            for r in rows
        ]  # fmt: skip

    async def revoke(self, allowance_id: int) -> bool:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "DELETE FROM action_allowances WHERE id = ?", (allowance_id,)
            )
        return cursor.rowcount == 1

    async def _select(self, where: str, params: tuple[object, ...]) -> list[Action]:
        async with self.db.conn.execute(f"SELECT * FROM actions {where}", params) as cursor:
            return [action_from_row(row, from_db_time) for row in await cursor.fetchall()]


def _dump(value: Any) -> str:
    return storable_json(value, ensure_ascii=False, sort_keys=True)


def _time(text: str) -> datetime:
    found = from_db_time(text)
    assert found is not None
    return found
