"""The events taken and not finished, and who handles each conversation (`memory.inbox`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memory.clock import Clock, utc_now
from memory.inbox import CLAIM_LEASE, InboxEntry, Taken, new_token, platform_of, read_payload
from memory.sqlite.database import SqliteDatabase, to_db_time
from memory.storable import storable_json


class SqliteInbox:
    """The `inbox` and `conversation_claims` tables."""

    def __init__(self, db: SqliteDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def take(
        self, key: str, conversation: str, payload: dict[str, Any], *, limit: int
    ) -> Taken:
        now = to_db_time(self.clock())
        async with self.db.write() as conn:
            async with conn.execute("SELECT 1 FROM seen_events WHERE key = ?", (key,)) as cur:
                if await cur.fetchone() is not None:
                    return "duplicate"
            async with conn.execute("SELECT count(*) FROM inbox") as cur:
                row = await cur.fetchone()
            if row is not None and row[0] >= limit:
                return "full"
            await conn.execute("INSERT INTO seen_events (key, seen_at) VALUES (?, ?)", (key, now))
            await conn.execute(
                "INSERT INTO inbox (platform, conversation, key, payload_json, taken_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (platform_of(conversation), conversation, key, storable_json(payload), now),
            )
        return "taken"

    async def claim(self, conversation: str, holder: str) -> bool:
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO conversation_claims (conversation, holder, until, token) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (conversation) DO UPDATE SET "
                "until = excluded.until, holder = excluded.holder, token = CASE "
                "WHEN conversation_claims.holder = excluded.holder "
                "THEN conversation_claims.token ELSE excluded.token END "
                "WHERE conversation_claims.holder = excluded.holder "
                "OR conversation_claims.until < ?",
                (conversation, holder, to_db_time(now + CLAIM_LEASE), new_token(), to_db_time(now)),
            )
        return cursor.rowcount == 1

    async def hold(self, conversation: str, holder: str, token: int) -> bool:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE conversation_claims SET until = ? "
                "WHERE conversation = ? AND holder = ? AND token = ?",
                (to_db_time(self.clock() + CLAIM_LEASE), conversation, holder, token),
            )
        return cursor.rowcount == 1

    async def next(self, conversation: str, holder: str) -> InboxEntry | None:
        async with self.db.write() as conn:
            async with conn.execute(
                "SELECT i.id, i.key, i.payload_json, i.started_at, c.token FROM inbox AS i "
                "JOIN conversation_claims AS c ON c.conversation = i.conversation "
                "WHERE i.conversation = ? AND c.holder = ? ORDER BY i.id LIMIT 1",
                (conversation, holder),
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                return None
            now = self.clock()
            await conn.execute(
                "UPDATE inbox SET started_at = ? WHERE id = ?", (to_db_time(now), row[0])
            )
            await conn.execute(  # the lease is whole when an entry is begun
                "UPDATE conversation_claims SET until = ? WHERE conversation = ?",
                (to_db_time(now + CLAIM_LEASE), conversation),
            )
        payload = read_payload(row[2])
        return InboxEntry(row[0], row[1], payload, abandoned=row[3] is not None, token=row[4])

    async def finish(self, entry: InboxEntry, holder: str) -> bool:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "DELETE FROM inbox WHERE id = ? AND EXISTS (SELECT 1 FROM conversation_claims "
                "AS c WHERE c.conversation = inbox.conversation AND c.holder = ? "
                "AND c.token = ?)",
                (entry.id, holder, entry.token),
            )
        return cursor.rowcount == 1

    async def release(self, conversation: str, holder: str) -> bool:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "DELETE FROM conversation_claims WHERE conversation = ? AND holder = ? "
                "AND NOT EXISTS (SELECT 1 FROM inbox WHERE conversation = ?)",
                (conversation, holder, conversation),
            )
            if cursor.rowcount == 1:
                return False
            async with conn.execute(
                "SELECT 1 FROM conversation_claims WHERE conversation = ? AND holder = ?",
                (conversation, holder),
            ) as found:
                return await found.fetchone() is not None

    async def let_go(self, conversation: str, holder: str) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "DELETE FROM conversation_claims WHERE conversation = ? AND holder = ?",
                (conversation, holder),
            )

    async def renew(self, holder: str, conversations: list[str]) -> int:
        marks = ", ".join("?" * len(conversations))
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE conversation_claims SET until = ? "
                f"WHERE holder = ? AND conversation IN ({marks})",
                (to_db_time(self.clock() + CLAIM_LEASE), holder, *conversations),
            )
        return cursor.rowcount

    async def release_all(self) -> None:
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM conversation_claims")

    async def fetch_unclaimed(self, platforms: list[str]) -> list[str]:
        if not platforms:
            return []
        marks = ", ".join("?" * len(platforms))
        async with self.db.conn.execute(
            "SELECT DISTINCT i.conversation FROM inbox AS i "
            "LEFT JOIN conversation_claims AS c ON c.conversation = i.conversation "
            f"WHERE i.platform IN ({marks}) AND (c.until IS NULL OR c.until < ?) "
            "ORDER BY i.conversation",
            (*platforms, to_db_time(self.clock())),
        ) as cursor:
            return [row[0] for row in await cursor.fetchall()]

    async def fetch_busy(self) -> set[str]:
        async with self.db.conn.execute(
            "SELECT conversation FROM conversation_claims WHERE until >= ? "
            "UNION SELECT conversation FROM inbox",
            (to_db_time(self.clock()),),
        ) as cursor:
            return {row[0] for row in await cursor.fetchall()}

    async def forget_taken_before(self, age: timedelta) -> int:
        cutoff = to_db_time(self.clock() - age)
        async with self.db.write() as conn:
            cursor = await conn.execute("DELETE FROM inbox WHERE taken_at < ?", (cutoff,))
        return cursor.rowcount

    async def waiting(self) -> int:
        return int(await self.db.scalar("SELECT count(*) FROM inbox"))
