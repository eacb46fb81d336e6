"""The events taken and not finished, and who handles each conversation (`memory.stores.inbox`),
shared by every replica of the database.

Each claim, hold and finish is one statement whose WHERE says who may do it (the holder,
its fencing token, or a lapsed lease), so two replicas never both succeed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memory.clock import Clock, utc_now
from memory.policy.storable import storable_json
from memory.sql.session import Result, Session, SqlDatabase, Statement, marks
from memory.stores.inbox import CLAIM_LEASE, InboxEntry, Taken, new_token, platform_of, read_payload


class SqlInbox:
    """The `inbox` and `conversation_claims` tables."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock
        self.time = db.dialect.time

    async def take(
        self, key: str, conversation: str, payload: dict[str, Any], *, limit: int
    ) -> Taken:
        now = self.time(self.clock())
        entry = (platform_of(conversation), conversation, key, storable_json(payload), now)
        ours = self.db.dialect.written_here
        # One round trip: the entry, when the event is new and there is room; its
        # sighting; then, should a concurrent delivery of the same event have recorded its
        # sighting first (on PostgreSQL, this waits for it to commit), this entry removed.
        inserted, _, removed, seen = await self.db.transact(
            [
                Statement(
                    "INSERT INTO inbox (platform, conversation, key, payload_json, taken_at) "
                    "SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM seen_events "
                    "WHERE key = ?) AND (SELECT count(*) FROM inbox) < ?",
                    (*entry, key, limit),
                ),
                Statement(
                    "INSERT INTO seen_events (key, seen_at) SELECT ?, ? WHERE EXISTS "
                    f"(SELECT 1 FROM inbox WHERE key = ? AND {ours('inbox')}) "
                    "ON CONFLICT DO NOTHING",
                    (key, now, key),
                ),
                Statement(
                    f"DELETE FROM inbox WHERE key = ? AND {ours('inbox')} AND NOT EXISTS "
                    f"(SELECT 1 FROM seen_events AS s WHERE s.key = ? AND {ours('s')})",
                    (key, key),
                ),
                Statement("SELECT count(*) AS n FROM seen_events WHERE key = ?", (key,)),
            ]
        )
        if inserted.changed == 1 and removed.changed == 0:
            return "taken"
        return "duplicate" if seen.rows[0]["n"] else "full"

    async def claim(self, conversation: str, holder: str) -> bool:
        now = self.clock()
        [claimed] = await self.db.transact(
            [
                Statement(
                    "INSERT INTO conversation_claims (conversation, holder, until, token) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (conversation) DO UPDATE SET "
                    "until = excluded.until, holder = excluded.holder, token = CASE "
                    "WHEN conversation_claims.holder = excluded.holder "
                    "THEN conversation_claims.token ELSE excluded.token END "
                    "WHERE conversation_claims.holder = excluded.holder "
                    "OR conversation_claims.until < ?",
                    (
                        conversation,
                        holder,
                        self.time(now + CLAIM_LEASE),
                        new_token(),
                        self.time(now),
                    ),
                )
            ]
        )
        return claimed.changed == 1

    async def hold(self, conversation: str, holder: str, token: int) -> bool:
        [held] = await self.db.transact(
            [
                Statement(
                    "UPDATE conversation_claims SET until = ? "
                    "WHERE conversation = ? AND holder = ? AND token = ?",
                    (self.time(self.clock() + CLAIM_LEASE), conversation, holder, token),
                )
            ]
        )
        return held.changed == 1

    async def next(self, conversation: str, holder: str) -> InboxEntry | None:
        async with self.db.transaction() as sql:
            return await self._begin_next(sql, conversation, holder)

    async def next_or_release(self, conversation: str, holder: str) -> InboxEntry | bool:
        async with self.db.transaction() as sql:
            entry = await self._begin_next(sql, conversation, holder)
            if entry is not None:
                return entry
            _, kept = await sql.batch(_release(conversation, holder))
            return bool(kept.rows)

    async def _begin_next(self, sql: Session, conversation: str, holder: str) -> InboxEntry | None:
        """The oldest entry, marked begun, with the claim's lease made whole: the entry is
        read first and then begun by its id, so on PostgreSQL an older entry committed
        meanwhile (ids do not follow commit order) is not begun in its place."""
        found = await sql.rows(
            "SELECT i.id, i.key, i.payload_json, i.started_at, c.token FROM inbox AS i "
            "JOIN conversation_claims AS c ON c.conversation = i.conversation "
            "WHERE i.conversation = ? AND c.holder = ? ORDER BY i.id LIMIT 1 "
            f"{self.db.dialect.lock_rows('i')}",
            (conversation, holder),
        )
        if not found:
            return None
        now = self.clock()
        await sql.batch(
            [
                Statement(
                    "UPDATE inbox SET started_at = ? WHERE id = ?",
                    (self.time(now), found[0]["id"]),
                ),
                Statement(
                    "UPDATE conversation_claims SET until = ? WHERE conversation = ?",
                    (self.time(now + CLAIM_LEASE), conversation),
                ),
            ]
        )
        return _entry(Result(found))

    async def finish(self, entry: InboxEntry, holder: str) -> bool:
        [finished] = await self.db.transact(
            [
                Statement(
                    "DELETE FROM inbox WHERE id = ? AND EXISTS (SELECT 1 FROM "
                    "conversation_claims AS c WHERE c.conversation = inbox.conversation "
                    "AND c.holder = ? AND c.token = ?)",
                    (entry.id, holder, entry.token),
                )
            ]
        )
        return finished.changed == 1

    async def release(self, conversation: str, holder: str) -> bool:
        _, kept = await self.db.transact(_release(conversation, holder))
        return bool(kept.rows)

    async def let_go(self, conversation: str, holder: str) -> None:
        async with self.db.transaction() as sql:
            await sql.run(
                "DELETE FROM conversation_claims WHERE conversation = ? AND holder = ?",
                (conversation, holder),
            )

    async def renew(self, holder: str, conversations: list[str]) -> int:
        if not conversations:
            return 0
        async with self.db.transaction() as sql:
            return await sql.run(
                "UPDATE conversation_claims SET until = ? "
                f"WHERE holder = ? AND conversation IN ({marks(len(conversations))})",
                (self.time(self.clock() + CLAIM_LEASE), holder, *conversations),
            )

    async def release_all(self) -> None:
        async with self.db.transaction() as sql:
            await sql.run("DELETE FROM conversation_claims")

    async def fetch_unclaimed(self, platforms: list[str]) -> list[str]:
        if not platforms:
            return []
        async with self.db.reading() as sql:
            rows = await sql.rows(
                "SELECT DISTINCT i.conversation FROM inbox AS i "
                "LEFT JOIN conversation_claims AS c ON c.conversation = i.conversation "
                f"WHERE i.platform IN ({marks(len(platforms))}) "
                "AND (c.until IS NULL OR c.until < ?) ORDER BY i.conversation",
                (*platforms, self.time(self.clock())),
            )
        return [row["conversation"] for row in rows]

    async def fetch_busy(self) -> set[str]:
        async with self.db.reading() as sql:
            rows = await sql.rows(
                "SELECT conversation FROM conversation_claims WHERE until >= ? "
                "UNION SELECT conversation FROM inbox",
                (self.time(self.clock()),),
            )
        return {row["conversation"] for row in rows}

    async def forget_taken_before(self, age: timedelta) -> int:
        async with self.db.transaction() as sql:
            return await sql.run(
                "DELETE FROM inbox WHERE taken_at < ?", (self.time(self.clock() - age),)
            )

    async def waiting(self) -> int:
        async with self.db.reading() as sql:
            row = await sql.row("SELECT count(*) AS n FROM inbox")
        return 0 if row is None else int(row["n"])


def _entry(found: Result) -> InboxEntry | None:
    if not found.rows:
        return None
    row = found.rows[0]
    payload = read_payload(row["payload_json"])
    abandoned = row["started_at"] is not None
    return InboxEntry(int(row["id"]), row["key"], payload, abandoned, int(row["token"]))


def _release(conversation: str, holder: str) -> list[Statement]:
    """Let the claim go unless entries wait, then whether `holder` still has it. An event
    taken while this runs is either seen here, or taken by its replica's own claim after
    this commits."""
    return [
        Statement(
            "DELETE FROM conversation_claims WHERE conversation = ? AND holder = ? "
            "AND NOT EXISTS (SELECT 1 FROM inbox WHERE conversation = ?)",
            (conversation, holder, conversation),
        ),
        Statement(
            "SELECT holder FROM conversation_claims WHERE conversation = ? AND holder = ?",
            (conversation, holder),
        ),
    ]
