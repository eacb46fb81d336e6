"""The skills active in each conversation, with the content hash that was approved: a skill
changed since stops being active."""

from __future__ import annotations

from memory.clock import Clock, utc_now
from memory.sql.session import Query, SqlDatabase, Statement, fetch_one


class SqlActiveSkills:
    """Skill activations by conversation."""

    def __init__(self, db: SqlDatabase, *, clock: Clock = utc_now) -> None:
        self.db = db
        self.clock = clock

    async def activate(self, conversation: str, name: str, sha256: str, by: str) -> None:
        """Remember that `name` at this content hash is active in `conversation`."""
        async with self.db.transaction() as sql:
            await sql.run(
                "INSERT INTO skill_activations (conversation, name, sha256, activated_by, "
                "activated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation, name) "
                "DO UPDATE SET sha256 = excluded.sha256, activated_by = excluded.activated_by, "
                "activated_at = excluded.activated_at",
                (conversation, name, sha256, by, self.db.dialect.time(self.clock())),
            )

    async def fetch(self, conversation: str) -> dict[str, str]:
        """Active skills of a conversation: name -> the content hash that was approved."""
        return await fetch_one(self.db, self.fetch_query(conversation))

    def fetch_query(self, conversation: str) -> Query[dict[str, str]]:
        statement = Statement(
            "SELECT name, sha256 FROM skill_activations WHERE conversation = ? ORDER BY name",
            (conversation,),
        )
        return Query([statement], lambda found: {r["name"]: r["sha256"] for r in found[0].rows})
