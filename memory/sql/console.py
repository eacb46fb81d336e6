"""The web console's one-time links and sessions (`memory.stores.console`), on every
engine."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from memory.clock import Clock, utc_now
from memory.sql.session import Row, SqlDatabase, Statement
from memory.stores.console import (
    KEEP_ENDED,
    LINK_TTL,
    ConsoleSession,
    LinkUse,
    token_hash,
)


class SqlConsoleSignIns:
    """`memory.stores.console.ConsoleSignIns` over neutral SQL."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock
        self.time = db.dialect.time

    async def create_link(self, token: str, user_id: str, ttl: timedelta = LINK_TTL) -> datetime:
        now = self.clock()
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO console_links (token_hash, user_id, created_at, expires_at) "
                "VALUES (?, ?, ?, ?)",
                (token_hash(token), user_id, self.time(now), self.time(now + ttl)),
            )
        return now + ttl

    async def use_link(self, token: str) -> LinkUse:
        now, key = self.time(self.clock()), token_hash(token)
        async with self.db.transaction() as sql:
            used = await sql.row(
                "UPDATE console_links SET used_at = ? "
                "WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id",
                (now, key, now),
            )
            if used is not None:
                return LinkUse("ok", used["user_id"])
            found = await sql.row("SELECT used_at FROM console_links WHERE token_hash = ?", (key,))
        if found is None:
            return LinkUse("unknown")
        return LinkUse("expired" if found["used_at"] is None else "used")

    async def open_session(
        self,
        token: str,
        user_id: str,
        *,
        via: str,
        csrf: str,
        scopes: tuple[str, ...],
        ttl: timedelta,
    ) -> ConsoleSession:
        now = self.clock()
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO console_sessions (token_hash, user_id, via, csrf, scopes_json, "
                "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    token_hash(token),
                    user_id,
                    via,
                    csrf,
                    json.dumps(list(scopes)),
                    self.time(now),
                    self.time(now + ttl),
                ),
            )
        return ConsoleSession(user_id, via, csrf, scopes, now, now + ttl)

    async def fetch_session(self, token: str) -> ConsoleSession | None:
        async with self.db.reading() as sql:
            found = await sql.row(
                "SELECT user_id, via, csrf, scopes_json, created_at, expires_at "
                "FROM console_sessions WHERE token_hash = ? AND ended_at IS NULL "
                "AND expires_at > ?",
                (token_hash(token), self.time(self.clock())),
            )
        return None if found is None else self._session(found)

    async def end_session(self, token: str) -> None:
        async with self.db.transaction() as sql:
            await sql.run(
                "UPDATE console_sessions SET ended_at = ? "
                "WHERE token_hash = ? AND ended_at IS NULL",
                (self.time(self.clock()), token_hash(token)),
            )

    async def purge(self) -> int:
        # An ended session expired by then too: a session lasts 30 days at most.
        before = self.time(self.clock() - KEEP_ENDED)
        [links, sessions] = await self.db.transact(
            [
                Statement("DELETE FROM console_links WHERE expires_at < ?", (before,)),
                Statement("DELETE FROM console_sessions WHERE expires_at < ?", (before,)),
            ]
        )
        return links.changed + sessions.changed

    def _session(self, row: Row) -> ConsoleSession:
        read_time = self.db.dialect.read_time
        created, expires = read_time(row["created_at"]), read_time(row["expires_at"])
        assert created is not None and expires is not None
        return ConsoleSession(
            user_id=row["user_id"],
            via=row["via"],
            csrf=row["csrf"],
            scopes=tuple(json.loads(row["scopes_json"])),
            created_at=created,
            expires_at=expires,
        )
