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
from memory.sql.session import Result, SqlDatabase, Statement, marks
from memory.stores.inbox import (
    CLAIM_LEASE,
    InboxEntry,
    Next,
    Taken,
    new_token,
    platform_of,
    read_payload,
)


class SqlInbox:
    """The `inbox` and `conversation_claims` tables."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock
        self.time = db.dialect.time

    async def take(
        self, key: str, conversation: str, payload: dict[str, Any], *, limit: int
    ) -> Taken:
        outcome, _ = await self.take_and_claim(key, conversation, payload, limit=limit)
        return outcome

    async def take_and_claim(
        self,
        key: str,
        conversation: str,
        payload: dict[str, Any],
        *,
        limit: int,
        holder: str | None = None,
    ) -> tuple[Taken, bool]:
        now = self.time(self.clock())
        entry = (platform_of(conversation), conversation, key, storable_json(payload), now)
        ours = self.db.dialect.written_here
        # One round trip: the entry, when the event is new and there is room; its
        # sighting; then, should a concurrent delivery of the same event have recorded its
        # sighting first (on PostgreSQL, this waits for it to commit), this entry removed.
        inserted, _, removed, seen, *claim = await self.db.transact(
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
                # Then, when asked, the conversation claimed.
                *([self._claim(conversation, holder)] if holder else []),
            ]
        )
        claimed = bool(holder) and claim[0].changed == 1
        if inserted.changed == 1 and removed.changed == 0:
            return "taken", claimed
        return ("duplicate" if seen.rows[0]["n"] else "full"), claimed

    async def claim(self, conversation: str, holder: str) -> bool:
        [claimed] = await self.db.transact([self._claim(conversation, holder)])
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
        held, begun_before, begun = await self.db.transact(self._begin_next(conversation, holder))
        return self._entry(held, begun_before, begun)

    async def next_or_release(self, conversation: str, holder: str) -> Next:
        return self._next_or_kept(
            await self.db.transact(self._next_or_release(conversation, holder))
        )

    async def claim_next(self, conversation: str, holder: str) -> Next:
        return self._next_or_kept(
            await self.db.transact(
                [self._claim(conversation, holder), *self._next_or_release(conversation, holder)]
            )
        )

    async def finish_next(
        self, entry: InboxEntry, conversation: str, holder: str
    ) -> tuple[bool, Next]:
        held, finished, *rest = await self.db.transact(
            self._next_or_release(conversation, holder, finishing=entry)
        )
        return finished.changed == 1, self._next_or_kept([held, *rest])

    def _begin_next(
        self, conversation: str, holder: str, *, finishing: InboxEntry | None = None
    ) -> list[Statement]:
        """The oldest entry, marked begun, with the claim's lease made whole; with
        `finishing`, that entry removed first. The claim's row is locked first, as every
        transaction that changes a claim and its entries does, so two replicas (one taking
        over a claim, one finishing under it) never wait on each other's rows. The entries
        begun before are read before one is begun: only a holder begins one, so an entry
        committed meanwhile (on PostgreSQL ids do not follow commit order) is new."""
        now = self.clock()
        return [
            Statement(
                "UPDATE conversation_claims SET until = ? WHERE conversation = ? AND holder = ? "
                "RETURNING token",
                (self.time(now + CLAIM_LEASE), conversation, holder),
            ),
            *([self._finish(finishing, holder)] if finishing else []),
            Statement(
                "SELECT id FROM inbox WHERE conversation = ? AND started_at IS NOT NULL",
                (conversation,),
            ),
            Statement(
                "UPDATE inbox SET started_at = ? WHERE id = (SELECT i.id FROM inbox AS i "
                "JOIN conversation_claims AS c ON c.conversation = i.conversation "
                "WHERE i.conversation = ? AND c.holder = ? ORDER BY i.id LIMIT 1 "
                f"{self.db.dialect.lock_rows('i')}) "
                "RETURNING id, key, payload_json",
                (self.time(now), conversation, holder),
            ),
        ]

    def _next_or_release(
        self, conversation: str, holder: str, *, finishing: InboxEntry | None = None
    ) -> list[Statement]:
        begin = self._begin_next(conversation, holder, finishing=finishing)
        return [*begin, *_release(conversation, holder)]

    @staticmethod
    def _entry(held: Result, begun_before: Result, begun: Result) -> InboxEntry | None:
        if not begun.rows or not held.rows:  # begun only under the claim `held` read
            return None
        row = begun.rows[0]
        abandoned = any(r["id"] == row["id"] for r in begun_before.rows)
        token = int(held.rows[0]["token"])  # the claim the entry was begun under
        return InboxEntry(
            int(row["id"]), row["key"], read_payload(row["payload_json"]), abandoned, token
        )

    def _next_or_kept(self, results: list[Result]) -> Next:
        """What `_next_or_release`'s statements found (without a finish's): the entry
        begun, else whether the claim was kept."""
        *_, held, begun_before, begun, _, kept = results
        entry = self._entry(held, begun_before, begun)
        return entry if entry is not None else bool(kept.rows)

    def _claim(self, conversation: str, holder: str) -> Statement:
        now = self.clock()
        return Statement(
            "INSERT INTO conversation_claims (conversation, holder, until, token) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (conversation) DO UPDATE SET "
            "until = excluded.until, holder = excluded.holder, token = CASE "
            "WHEN conversation_claims.holder = excluded.holder "
            "THEN conversation_claims.token ELSE excluded.token END "
            "WHERE conversation_claims.holder = excluded.holder "
            "OR conversation_claims.until < ?",
            (conversation, holder, self.time(now + CLAIM_LEASE), new_token(), self.time(now)),
        )

    @staticmethod
    def _finish(entry: InboxEntry, holder: str) -> Statement:
        return Statement(
            "DELETE FROM inbox WHERE id = ? AND EXISTS (SELECT 1 FROM "
            "conversation_claims AS c WHERE c.conversation = inbox.conversation "
            "AND c.holder = ? AND c.token = ?)",
            (entry.id, holder, entry.token),
        )

    async def finish(self, entry: InboxEntry, holder: str) -> bool:
        [finished] = await self.db.transact([self._finish(entry, holder)])
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
