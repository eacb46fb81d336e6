"""The neutral SQL runs alike on both engines: placeholders (a literal `%` too), inserted
ids, batches sent together, and a batched transaction that commits whole or not at all."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.sql.session import Statement

INSERT = "INSERT INTO daily_logs (conversation, day, content, updated_at) VALUES (?, ?, ?, ?)"


NOW = datetime(2026, 11, 2, 9, tzinfo=UTC)


def _log(conversation: str, content: str, db: Any) -> Statement:
    return Statement(INSERT, (conversation, "2026-11-02", content, db.dialect.time(NOW)))


async def test_a_batched_transaction_commits_every_statement_and_answers_each(
    engine_stores: Any,
) -> None:
    db = engine_stores.db
    results = await db.transact(
        [
            _log("slack/T1/C1", "first", db),
            _log("slack/T1/C2", "50% done", db),
            Statement("UPDATE daily_logs SET content = ? WHERE conversation = ?", ("x", "none")),
            Statement(
                "SELECT conversation FROM daily_logs WHERE content LIKE ? ORDER BY conversation",
                ("%done",),
            ),
        ]
    )
    assert [r.changed for r in results[:3]] == [1, 1, 0]
    assert [row["conversation"] for row in results[3].rows] == ["slack/T1/C2"]
    async with db.reading() as sql:
        found = await sql.batch(
            [
                Statement("SELECT count(*) AS n FROM daily_logs"),
                Statement(
                    "SELECT content FROM daily_logs WHERE conversation = ?", ("slack/T1/C1",)
                ),
            ]
        )
    assert found[0].rows[0]["n"] == 2
    assert found[1].rows[0]["content"] == "first"


async def test_a_batched_transaction_that_fails_midway_writes_nothing(engine_stores: Any) -> None:
    db = engine_stores.db
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        await db.transact(
            [
                _log("slack/T1/C1", "kept?", db),
                _log("slack/T1/C2", "one", db),
                _log("slack/T1/C2", "the same day again", db),  # breaks the primary key
            ]
        )
    async with db.reading() as sql:
        assert (await sql.row("SELECT count(*) AS n FROM daily_logs"))["n"] == 0
    await db.transact([_log("slack/T1/C1", "after", db)])  # the database takes writes again
    async with db.reading() as sql:
        assert (await sql.row("SELECT content FROM daily_logs"))["content"] == "after"
