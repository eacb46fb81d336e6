"""Which replica leads: a PostgreSQL advisory lock, held on a connection of its own.

Session advisory locks belong to the connection that took them, so the lock is never
taken on a pooled connection (the pool could hand it back or close it unnoticed). The
server frees it when that connection ends: at once when the leader's process dies (its
socket closes), and after its TCP keepalives go unanswered when the leader is cut off
(`SERVER_GIVES_UP_S`). The leader meanwhile confirms its connection every few seconds
and gives up leading when it cannot within `LEASE_S`: since `LEASE_S` is shorter than
the server's wait, a cut-off leader has stopped before anyone else can take the lock.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg

from memory.policy.conninfo import read_conninfo
from memory.stores.leadership import LEASE_S

_log = logging.getLogger(__name__)

LEADER_LOCK = 0x6C656164  # "lead"
# How the server notices a leader cut off from it: keepalives after this many seconds of
# silence, every interval, this many unanswered (and unacknowledged data as long).
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 2, 3
SERVER_GIVES_UP_S = KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT
assert SERVER_GIVES_UP_S > LEASE_S, "a cut-off leader must stop before the lock is freed"
_SESSION = (
    f"SET tcp_keepalives_idle = {KEEPALIVE_IDLE_S}; "
    f"SET tcp_keepalives_interval = {KEEPALIVE_INTERVAL_S}; "
    f"SET tcp_keepalives_count = {KEEPALIVE_COUNT}; "
    f"SET tcp_user_timeout = {SERVER_GIVES_UP_S * 1000}"
)


class AdvisoryLeadership:
    """The leader lock of one database, tried and confirmed on a dedicated connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def try_lead(self) -> bool:
        """Take the lock if no replica holds it; False (never an error) when another does
        or the server does not answer within `LEASE_S`."""
        try:
            if self._conn is None or self._conn.closed:
                self._conn = await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, connect_timeout=max(1, round(LEASE_S / 2))
                )
                await self._conn.execute(_SESSION)
            taken = await self._answer(
                "SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK,), within=LEASE_S
            )
        except psycopg.Error as exc:
            conninfo = read_conninfo(self.url)  # libpq may quote the URL or its password
            _log.debug(
                "could not try the leader lock at %s: %s", conninfo.shown, conninfo.scrub(str(exc))
            )
            self._abandon()
            return False
        return bool(taken)

    async def confirm(self, within: float) -> bool:
        """Whether the lock is still this replica's: its connection answers within
        `within` seconds (a session keeps its lock while it lives). False means: stop
        leading now."""
        try:
            return await self._answer("SELECT true", (), within=within) is True
        except psycopg.Error as exc:
            _log.warning("the leader lock's connection failed: %s", exc)
            self._abandon()
            return False

    async def _answer(self, sql: str, params: tuple[object, ...], *, within: float) -> object:
        """The one value `sql` returns on the lock's connection; None, with the connection
        dropped, when it does not come within `within` seconds. The query is not cancelled
        then: psycopg would first ask the server to cancel it, for up to 10 s more, on a
        connection that may not answer at all."""
        conn = self._conn
        if conn is None or conn.closed:
            return None
        query = asyncio.ensure_future(_one_value(conn, sql, params))
        done, _ = await asyncio.wait({query}, timeout=within)
        if not done:
            _log.warning("the leader lock's connection did not answer within %.1f s", within)
            query.add_done_callback(_ignore_outcome)
            self._abandon()
            return None
        return query.result()

    async def release(self) -> None:
        """Let the lock go: closing its connection frees it."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            await conn.close()

    def _abandon(self) -> None:
        """Drop a connection that no longer answers, without waiting on it: its socket is
        closed here, and the server frees the lock when it notices."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            conn.pgconn.finish()


async def _one_value(
    conn: psycopg.AsyncConnection[Any], sql: str, params: tuple[object, ...]
) -> object:
    cursor = await conn.execute(sql, params)
    row = await cursor.fetchone()
    return None if row is None else row[0]


def _ignore_outcome(task: asyncio.Future[object]) -> None:
    """Retrieve the end of an abandoned query (its connection was closed under it)."""
    if not task.cancelled():
        task.exception()
