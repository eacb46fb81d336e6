"""The replicas table on both engines: a replica's row as its heartbeat writes it, the
leader listed first, a clean stop removing the row, and a replica lost for a day
forgotten by the next heartbeat of another."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memory.stores.replicas import FORGET_AFTER, LOST_AFTER, Replica

START = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _replica(name: str, role: str, beat: datetime, started: datetime = START) -> Replica:
    return Replica(f"{name}:1", name, 1, role, started, beat)  # type: ignore[arg-type]


async def test_replicas_are_listed_leader_first_and_leave_when_they_stop(
    engine_stores: Any,
) -> None:
    replicas = engine_stores.replicas
    await replicas.beat(_replica("a", "standby", START))
    await replicas.beat(_replica("b", "leader", START, started=START + timedelta(seconds=5)))
    later = START + timedelta(seconds=2)
    await replicas.beat(_replica("a", "standby", later))
    listed = await replicas.fetch_all()
    assert [(r.id, r.role) for r in listed] == [("b:1", "leader"), ("a:1", "standby")]
    assert listed[1].heartbeat_at == later and listed[1].started_at == START
    assert listed[1].lost(later + LOST_AFTER / 2) is False
    assert listed[1].lost(later + LOST_AFTER * 2) is True

    await replicas.leave("b:1")
    assert [r.id for r in await replicas.fetch_all()] == ["a:1"]


async def test_a_replica_lost_for_a_day_is_forgotten(engine_stores: Any) -> None:
    replicas = engine_stores.replicas
    await replicas.beat(_replica("gone", "leader", START))
    await replicas.beat(_replica("here", "leader", START + FORGET_AFTER - timedelta(minutes=1)))
    assert len(await replicas.fetch_all()) == 2
    await replicas.beat(_replica("here", "leader", START + FORGET_AFTER + timedelta(minutes=1)))
    assert [r.id for r in await replicas.fetch_all()] == ["here:1"]
