"""The audit of actions and the allowances, on both engines: an action is stored redacted,
starts once, ends with its capped output, and an allowance holds for the server it was
granted for."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory.stores.actions import OUTPUT_MAX_CHARS
from memory.stores.stores import StoreOptions
from tests.support.clock import FakeClock
from tests.support.engines import open_engine

SECRET = "ghp_0123456789abcdefghij"
WHERE = {"platform": "slack", "channel_id": "C1", "thread_id": "1.1"}
CHANNEL = "channel:slack/T1/C1"


@pytest.fixture
async def actions(engine: str, database_at: Any, clock: FakeClock) -> Any:
    stores = await open_engine(engine, database_at, StoreOptions(clock=clock, secrets=(SECRET,)))
    try:
        yield stores.actions
    finally:
        await stores.close()


async def test_an_action_is_stored_redacted_and_runs_once(actions: Any, clock: FakeClock) -> None:
    asked = await actions.record(
        "deploy",
        {"service": "web", "token": SECRET},
        requester="user:slack/U1",
        channel_scope=CHANNEL,
        conversation=WHERE,
        approval="card",
    )
    assert (asked.outcome, asked.started_at, asked.created_at) == ("pending", None, clock())
    assert asked.arguments["service"] == "web" and SECRET not in repr(asked.arguments)
    assert asked.conversation == WHERE
    await actions.attach_proposal(asked.id, 41)
    assert (await actions.fetch_by_proposal(41)).id == asked.id
    clock.advance(seconds=5)
    running = await actions.start(asked.id, decided_by="user:slack/U2")
    assert (running.outcome, running.decided_by, running.started_at) == (
        "running",
        "user:slack/U2",
        clock(),
    )
    with pytest.raises(ValueError, match="already started"):
        await actions.start(asked.id)
    done = await actions.finish(asked.id, "ok", f"used {SECRET} " + "x" * 9000, 120)
    assert (done.outcome, done.duration_ms) == ("ok", 120)
    assert SECRET not in done.output and len(done.output) == OUTPUT_MAX_CHARS
    with pytest.raises(ValueError, match="unknown outcome"):
        await actions.finish(asked.id, "great", "", 1)
    with pytest.raises(LookupError, match="no action 999"):
        await actions.fetch(999)


async def test_only_a_pending_action_is_closed(actions: Any, clock: FakeClock) -> None:
    first = await actions.record(
        "restart",
        {},
        requester="user:slack/U1",
        channel_scope=CHANNEL,
        conversation=WHERE,
        approval="card",
    )
    second = await actions.record(
        "restart",
        {},
        requester="user:slack/U1",
        channel_scope="channel:slack/T1/C2",
        conversation=WHERE,
        approval="card",
    )
    assert (await actions.close(first.id, "declined", "user:slack/U9")).outcome == "declined"
    await actions.start(second.id)
    assert (await actions.close(second.id, "expired", None)).outcome == "running"
    assert [a.id for a in await actions.fetch_recent(10)] == [second.id, first.id]
    in_channel = await actions.fetch_in_channel(
        CHANNEL, clock() - timedelta(minutes=1), clock() + timedelta(minutes=1)
    )
    assert [a.id for a in in_channel] == [first.id]
    assert await actions.fetch_in_channel(CHANNEL, clock() + timedelta(seconds=1), clock()) == []


async def test_an_allowance_holds_for_the_server_it_was_granted_for(actions: Any) -> None:
    granted = await actions.allow(CHANNEL, "status", "user:slack/UADMIN", server_id="srv-a")
    assert (granted.tool, granted.server_id) == ("status", "srv-a")
    assert await actions.allowed(CHANNEL, "status", "srv-a")
    assert not await actions.allowed(CHANNEL, "status", "srv-b")  # the server changed
    assert not await actions.allowed("channel:slack/T1/C2", "status", "srv-a")
    assert not await actions.allowed(None, "status", "srv-a")
    again = await actions.allow(CHANNEL, "status", "user:slack/UOTHER", server_id="srv-a")
    assert again.granted_by == "user:slack/UADMIN"  # the same grant, kept as it was
    moved = await actions.allow(CHANNEL, "status", "user:slack/UOTHER", server_id="srv-b")
    assert (moved.id, moved.server_id) == (granted.id, "srv-b")
    assert [a.server_id for a in await actions.fetch_allowances()] == ["srv-b"]
    assert await actions.revoke(granted.id) and not await actions.revoke(granted.id)
    assert await actions.fetch_allowances() == []
