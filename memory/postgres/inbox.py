"""The events taken and not finished, and who handles each conversation (`memory.inbox`),
shared by every replica of the database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memory.clock import Clock, utc_now
from memory.inbox import CLAIM_LEASE, InboxEntry, Taken, new_token, platform_of, read_payload
from memory.postgres.database import PostgresDatabase
from memory.storable import storable_json


class PostgresInbox:
    """The `inbox` and `conversation_claims` tables."""

    def __init__(self, db: PostgresDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def take(
        self, key: str, conversation: str, payload: dict[str, Any], *, limit: int
    ) -> Taken:
        now = self.clock()
        async with self.db.write() as conn:
            seen = await conn.execute("SELECT 1 FROM seen_events WHERE key = %s", (key,))
            if await seen.fetchone() is not None:
                return "duplicate"
            count = await (await conn.execute("SELECT count(*) AS n FROM inbox")).fetchone()
            if count is not None and count["n"] >= limit:
                return "full"
            # A concurrent delivery of the same event waits here for the first to commit.
            inserted = await conn.execute(
                "INSERT INTO seen_events (key, seen_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (key, now),
            )
            if inserted.rowcount != 1:
                return "duplicate"
            await conn.execute(
                "INSERT INTO inbox (platform, conversation, key, payload_json, taken_at) "
                "VALUES (%s, %s, %s, %s, %s)",
                (platform_of(conversation), conversation, key, storable_json(payload), now),
            )
        return "taken"

    async def claim(self, conversation: str, holder: str) -> bool:
        now = self.clock()
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "INSERT INTO conversation_claims (conversation, holder, until, token) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (conversation) DO UPDATE SET "
                "until = excluded.until, holder = excluded.holder, token = CASE "
                "WHEN conversation_claims.holder = excluded.holder "
                "THEN conversation_claims.token ELSE excluded.token END "
                "WHERE conversation_claims.holder = excluded.holder "
                "OR conversation_claims.until < %s",
                (conversation, holder, now + CLAIM_LEASE, new_token(), now),
            )
        return cursor.rowcount == 1

    async def hold(self, conversation: str, holder: str, token: int) -> bool:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE conversation_claims SET until = %s "
                "WHERE conversation = %s AND holder = %s AND token = %s",
                (self.clock() + CLAIM_LEASE, conversation, holder, token),
            )
        return cursor.rowcount == 1

    async def next(self, conversation: str, holder: str) -> InboxEntry | None:
        async with self.db.write() as conn:
            row = await (
                await conn.execute(
                    "SELECT i.id, i.key, i.payload_json, i.started_at, c.token FROM inbox AS i "
                    "JOIN conversation_claims AS c ON c.conversation = i.conversation "
                    "WHERE i.conversation = %s AND c.holder = %s ORDER BY i.id LIMIT 1 "
                    "FOR UPDATE OF i",
                    (conversation, holder),
                )
            ).fetchone()
            if row is None:
                return None
            now = self.clock()
            await conn.execute("UPDATE inbox SET started_at = %s WHERE id = %s", (now, row["id"]))
            await conn.execute(  # the lease is whole when an entry is begun
                "UPDATE conversation_claims SET until = %s WHERE conversation = %s",
                (now + CLAIM_LEASE, conversation),
            )
        payload = read_payload(row["payload_json"])
        abandoned = row["started_at"] is not None
        return InboxEntry(int(row["id"]), row["key"], payload, abandoned, int(row["token"]))

    async def finish(self, entry: InboxEntry, holder: str) -> bool:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "DELETE FROM inbox WHERE id = %s AND EXISTS (SELECT 1 FROM conversation_claims "
                "AS c WHERE c.conversation = inbox.conversation AND c.holder = %s "
                "AND c.token = %s)",
                (entry.id, holder, entry.token),
            )
        return cursor.rowcount == 1

    async def release(self, conversation: str, holder: str) -> bool:
        async with self.db.write() as conn:
            # An event taken while this runs is either seen here, or taken by its replica's
            # own claim after this commits.
            cursor = await conn.execute(
                "DELETE FROM conversation_claims WHERE conversation = %s AND holder = %s "
                "AND NOT EXISTS (SELECT 1 FROM inbox WHERE conversation = %s)",
                (conversation, holder, conversation),
            )
            if cursor.rowcount == 1:
                return False
            kept = await conn.execute(
                "SELECT 1 FROM conversation_claims WHERE conversation = %s AND holder = %s",
                (conversation, holder),
            )
            return await kept.fetchone() is not None

    async def let_go(self, conversation: str, holder: str) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "DELETE FROM conversation_claims WHERE conversation = %s AND holder = %s",
                (conversation, holder),
            )

    async def renew(self, holder: str, conversations: list[str]) -> int:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "UPDATE conversation_claims SET until = %s "
                "WHERE holder = %s AND conversation = ANY(%s)",
                (self.clock() + CLAIM_LEASE, holder, conversations),
            )
        return cursor.rowcount

    async def release_all(self) -> None:
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM conversation_claims")

    async def fetch_unclaimed(self, platforms: list[str]) -> list[str]:
        rows = await self.db.rows(
            "SELECT DISTINCT i.conversation FROM inbox AS i "
            "LEFT JOIN conversation_claims AS c ON c.conversation = i.conversation "
            "WHERE i.platform = ANY(%s) AND (c.until IS NULL OR c.until < %s) "
            "ORDER BY i.conversation",
            (platforms, self.clock()),
        )
        return [row["conversation"] for row in rows]

    async def fetch_busy(self) -> set[str]:
        rows = await self.db.rows(
            "SELECT conversation FROM conversation_claims WHERE until >= %s "
            "UNION SELECT conversation FROM inbox",
            (self.clock(),),
        )
        return {row["conversation"] for row in rows}

    async def forget_taken_before(self, age: timedelta) -> int:
        async with self.db.write() as conn:
            cursor = await conn.execute(
                "DELETE FROM inbox WHERE taken_at < %s", (self.clock() - age,)
            )
        return cursor.rowcount

    async def waiting(self) -> int:
        return int(await self.db.scalar("SELECT count(*) FROM inbox"))
