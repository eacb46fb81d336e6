"""The inbox on both engines: an event stored in the transaction that sees it, a
conversation handled by one holder at a time in the order its events came, a lapsed
claim taken over with the begun entry marked abandoned, and a claim let go only when
nothing waits; a holder that lost its claim, even to a holder that let it go since, can
neither extend it nor finish an entry under it (fencing)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from memory.stores.inbox import CLAIM_LEASE
from tests.support.clock import FakeClock
from tests.support.polling import until


def _event(n: int) -> dict[str, Any]:
    return {"kind": "message", "text": f"question {n}"}


async def test_an_event_is_taken_once_and_not_past_the_limit(engine_stores: Any) -> None:
    inbox = engine_stores.inbox
    assert await inbox.take("slack:E1", "slack/C1", _event(1), limit=2) == "taken"
    assert await inbox.take("slack:E1", "slack/C1", _event(1), limit=2) == "duplicate"
    assert await inbox.take("slack:E2", "slack/C2", _event(2), limit=2) == "taken"
    assert await inbox.take("slack:E3", "slack/C3", _event(3), limit=2) == "full"
    # Turned away, not seen: the platform may give it again once there is room.
    assert not await engine_stores.seen.seen("slack:E3")
    assert await engine_stores.seen.seen("slack:E1")
    assert await inbox.waiting() == 2


async def test_an_event_is_taken_and_its_conversation_claimed_in_one_step(
    engine_stores: Any,
) -> None:
    inbox = engine_stores.inbox
    take = inbox.take_and_claim
    assert await take("slack:E1", "slack/C1", _event(1), limit=2, holder="a:1") == ("taken", True)
    assert not await inbox.claim("slack/C1", "b:1")  # a has it
    first = await inbox.next_or_release("slack/C1", "a:1")  # and handles it
    assert first is not True and first is not False and first.payload == _event(1)
    # Another holder's conversation stays theirs; without a holder nothing is claimed.
    assert await take("slack:E2", "slack/C1", _event(2), limit=2, holder="b:1") == ("taken", False)
    assert await take("slack:E3", "slack/C2", _event(3), limit=2) == ("full", False)
    assert await inbox.claim("slack/C2", "b:1")
    # Claimed even when the event is not taken (a duplicate, or no room): its claimer
    # then handles what waits there, or lets it go.
    await inbox.release("slack/C2", "b:1")
    assert await take("slack:E3", "slack/C2", _event(3), limit=2, holder="b:1") == ("full", True)
    assert await inbox.next_or_release("slack/C2", "b:1") is False


async def test_one_holder_handles_a_conversation_in_order(engine_stores: Any) -> None:
    inbox = engine_stores.inbox
    for n in (1, 2):
        await inbox.take(f"slack:E{n}", "slack/C1", _event(n), limit=10)
    assert await inbox.claim("slack/C1", "a:1")
    assert not await inbox.claim("slack/C1", "b:1")
    assert await inbox.next("slack/C1", "b:1") is None  # b does not hold it
    first = await inbox.next("slack/C1", "a:1")
    assert first is not None and first.payload == _event(1) and not first.abandoned
    assert await inbox.fetch_unclaimed(["slack"]) == []
    assert await inbox.finish(first, "a:1")
    assert await inbox.release("slack/C1", "a:1")  # one still waits: a keeps it
    second = await inbox.next("slack/C1", "a:1")
    assert second is not None and second.payload == _event(2)
    assert await inbox.finish(second, "a:1")
    assert not await inbox.release("slack/C1", "a:1")
    assert await inbox.claim("slack/C1", "b:1")  # let go: anyone may take it
    assert await inbox.waiting() == 0


async def test_taking_the_next_entry_or_letting_go_is_one_step(engine_stores: Any) -> None:
    inbox = engine_stores.inbox
    await inbox.take("slack:E1", "slack/C1", _event(1), limit=10)
    assert await inbox.claim("slack/C1", "a:1")
    assert await inbox.next_or_release("slack/C1", "b:1") is False  # b does not hold it
    entry = await inbox.next_or_release("slack/C1", "a:1")
    assert entry is not True and entry is not False and entry.payload == _event(1)
    assert not await inbox.claim("slack/C1", "b:1")  # a keeps it while it handles the entry
    assert await inbox.finish(entry, "a:1")
    assert await inbox.next_or_release("slack/C1", "a:1") is False  # nothing waits: let go
    assert await inbox.claim("slack/C1", "b:1")


async def test_claiming_and_beginning_the_first_entry_is_one_step(engine_stores: Any) -> None:
    inbox = engine_stores.inbox
    assert await inbox.claim_next("slack/C1", "a:1") is False  # nothing waits: not kept
    assert await inbox.claim("slack/C1", "b:1")  # so anyone may claim it
    await inbox.release("slack/C1", "b:1")
    for n in (1, 2):
        await inbox.take(f"slack:E{n}", "slack/C1", _event(n), limit=10)
    first = await inbox.claim_next("slack/C1", "a:1")
    assert first is not True and first is not False
    assert first.payload == _event(1) and not first.abandoned
    assert await inbox.claim_next("slack/C1", "b:1") is False  # a holds it: b begins nothing
    assert not await inbox.claim("slack/C1", "b:1")
    assert await inbox.hold("slack/C1", "a:1", first.token)  # begun under a's token


async def test_finishing_an_entry_begins_the_next_or_lets_go_in_one_step(
    engine_stores: Any,
) -> None:
    inbox = engine_stores.inbox
    for n in (1, 2):
        await inbox.take(f"slack:E{n}", "slack/C1", _event(n), limit=10)
    first = await inbox.claim_next("slack/C1", "a:1")
    assert first is not True and first is not False
    finished, second = await inbox.finish_next(first, "slack/C1", "a:1")
    assert finished and second is not True and second is not False
    assert second.payload == _event(2) and not second.abandoned
    assert await inbox.waiting() == 1
    assert await inbox.finish_next(second, "slack/C1", "a:1") == (True, False)  # let go
    assert await inbox.waiting() == 0
    assert await inbox.claim("slack/C1", "b:1")


async def test_an_entry_begun_again_is_abandoned_whichever_step_begins_it(
    engine_stores: Any, clock: FakeClock
) -> None:
    inbox = engine_stores.inbox
    for n in (1, 2):
        await inbox.take(f"slack:E{n}", "slack/C1", _event(n), limit=10)
    first = await inbox.claim_next("slack/C1", "a:1")  # a begins, then dies
    assert first is not True and first is not False
    clock.advance(seconds=CLAIM_LEASE.total_seconds() + 1)
    again = await inbox.claim_next("slack/C1", "b:1")
    assert again is not True and again is not False
    assert again.id == first.id and again.abandoned and again.token != first.token
    assert await inbox.finish_next(first, "slack/C1", "a:1") == (False, False)  # fenced off
    finished, second = await inbox.finish_next(again, "slack/C1", "b:1")
    assert finished and second is not True and second is not False and not second.abandoned


async def test_a_lapsed_claim_is_taken_over_with_its_begun_entry_abandoned(
    engine_stores: Any, clock: FakeClock
) -> None:
    inbox = engine_stores.inbox
    await inbox.take("slack:E1", "slack/C1", _event(1), limit=10)
    await inbox.take("slack:E2", "slack/C1", _event(2), limit=10)
    await inbox.take("discord:E3", "discord/D1", _event(3), limit=10)
    assert await inbox.claim("slack/C1", "a:1")
    assert await inbox.next("slack/C1", "a:1") is not None  # a begins, then dies
    clock.advance(seconds=CLAIM_LEASE.total_seconds() / 2)
    assert not await inbox.claim("slack/C1", "b:1")
    assert await inbox.fetch_unclaimed(["slack"]) == []
    assert await inbox.fetch_busy() == {"slack/C1", "discord/D1"}

    clock.advance(seconds=CLAIM_LEASE.total_seconds())
    assert await inbox.fetch_unclaimed(["slack"]) == ["slack/C1"]
    assert await inbox.fetch_unclaimed(["slack", "discord"]) == ["discord/D1", "slack/C1"]
    assert await inbox.fetch_busy() == {"slack/C1", "discord/D1"}  # entries wait there
    assert await inbox.claim("slack/C1", "b:1")
    begun = await inbox.next("slack/C1", "b:1")
    assert begun is not None and begun.payload == _event(1) and begun.abandoned
    assert await inbox.finish(begun, "b:1")
    waiting = await inbox.next("slack/C1", "b:1")
    assert waiting is not None and waiting.payload == _event(2) and not waiting.abandoned
    # The old holder, back, finds the conversation is no longer its own.
    assert not await inbox.release("slack/C1", "a:1")
    assert await inbox.next("slack/C1", "a:1") is None


async def test_renewing_keeps_a_claim_past_its_first_lease(
    engine_stores: Any, clock: FakeClock
) -> None:
    inbox = engine_stores.inbox
    await inbox.take("slack:E1", "slack/C1", _event(1), limit=10)
    await inbox.take("slack:E2", "slack/C2", _event(2), limit=10)
    assert await inbox.claim("slack/C1", "a:1") and await inbox.claim("slack/C2", "a:1")
    for _ in range(3):
        clock.advance(seconds=CLAIM_LEASE.total_seconds() * 0.6)
        assert await inbox.renew("a:1", ["slack/C1"]) == 1
    assert not await inbox.claim("slack/C1", "b:1")
    # A claim its holder stopped working on (the database failed it) lapses.
    assert await inbox.fetch_unclaimed(["slack"]) == ["slack/C2"]
    entry = await inbox.next("slack/C1", "a:1")
    assert entry is not None
    assert await inbox.finish(entry, "a:1")
    assert await inbox.fetch_busy() == {"slack/C1", "slack/C2"}  # C1 claimed, C2 waits
    await inbox.release_all()
    assert await inbox.claim("slack/C1", "b:1")


async def test_two_deliveries_of_one_event_at_once_store_it_once(open_again: Any) -> None:
    first, second = await open_again(), await open_again()
    outcomes = await asyncio.gather(
        *(s.inbox.take("slack:E1", "slack/C1", _event(1), limit=10) for s in (first, second))
    )
    assert sorted(outcomes) == ["duplicate", "taken"]
    assert await first.inbox.waiting() == 1


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
async def test_a_delivery_racing_another_replicas_uncommitted_take_is_a_duplicate(
    engine_stores: Any, database_at: str
) -> None:
    """The race the test above may not hit: another replica has recorded the sighting and
    not yet committed. This take waits for it, then finds the event taken."""
    async with (
        await psycopg.AsyncConnection.connect(database_at, autocommit=True) as watcher,
        await psycopg.AsyncConnection.connect(database_at) as other,
    ):
        await other.execute(
            "INSERT INTO seen_events (key, seen_at) VALUES ('slack:E1', now())"
        )  # its transaction stays open
        take = asyncio.create_task(
            engine_stores.inbox.take("slack:E1", "slack/C1", _event(1), limit=10)
        )

        async def take_waits_on_a_lock() -> bool:
            waiting = await watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
            return await waiting.fetchone() is not None

        await until(take_waits_on_a_lock)  # on the other's uncommitted key
        await other.commit()
    assert await take == "duplicate"
    assert await engine_stores.inbox.waiting() == 0


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
async def test_finishing_under_a_lapsed_claim_waits_for_its_taker_without_a_deadlock(
    engine_stores: Any, database_at: str, clock: FakeClock
) -> None:
    """A replica paused past its lease finishes its entry while another takes the
    conversation over. Both lock the claim's row before an entry's, so the finishing one
    waits for the taker's commit holding no entry, and is then fenced off."""
    inbox = engine_stores.inbox
    for n in (1, 2):
        await inbox.take(f"slack:E{n}", "slack/C1", _event(n), limit=10)
    first = await inbox.claim_next("slack/C1", "a:1")
    assert first is not True and first is not False
    clock.advance(seconds=CLAIM_LEASE.total_seconds() + 1)
    async with (
        await psycopg.AsyncConnection.connect(database_at, autocommit=True) as watcher,
        await psycopg.AsyncConnection.connect(database_at) as taker,
    ):
        # The taker's claim, its transaction open, then the oldest entry begun as
        # `claim_next` begins it: it must not wait on the finishing replica.
        await taker.execute("SET lock_timeout = '10s'")
        await taker.execute(
            "UPDATE conversation_claims SET holder = 'b:1', token = 7 WHERE conversation = %s",
            ("slack/C1",),
        )
        finishing = asyncio.create_task(inbox.finish_next(first, "slack/C1", "a:1"))

        async def finishing_waits_on_a_lock() -> bool:
            waiting = await watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
            return await waiting.fetchone() is not None

        await until(finishing_waits_on_a_lock)  # on the taker's claim row
        oldest = await taker.execute(
            "SELECT id FROM inbox WHERE conversation = %s ORDER BY id LIMIT 1 FOR UPDATE",
            ("slack/C1",),
        )
        assert await oldest.fetchall() == [(first.id,)]
        await taker.commit()
    assert await finishing == (False, False)  # the conversation is b's now
    assert await inbox.waiting() == 2


async def test_entries_waiting_past_an_age_are_dropped(
    engine_stores: Any, clock: FakeClock
) -> None:
    inbox = engine_stores.inbox
    await inbox.take("gone:E1", "gone/C1", _event(1), limit=10)
    clock.advance(hours=2)
    await inbox.take("gone:E2", "gone/C1", _event(2), limit=10)
    assert await inbox.forget_taken_before(timedelta(hours=1)) == 1
    assert await inbox.waiting() == 1


async def test_a_holder_that_lost_its_claim_is_fenced_off(
    engine_stores: Any, clock: FakeClock
) -> None:
    inbox = engine_stores.inbox
    await inbox.take("slack:E1", "slack/C1", _event(1), limit=10)
    assert await inbox.claim("slack/C1", "a:1")
    begun = await inbox.next("slack/C1", "a:1")
    assert begun is not None
    assert await inbox.hold("slack/C1", "a:1", begun.token)  # a holds it, and extends it
    clock.advance(seconds=CLAIM_LEASE.total_seconds() * 0.9)
    assert not await inbox.claim("slack/C1", "b:1")  # extended by `hold`: not lapsed
    assert await inbox.claim("slack/C1", "a:1")  # a's own claim again: the same token
    assert await inbox.hold("slack/C1", "a:1", begun.token)

    clock.advance(seconds=CLAIM_LEASE.total_seconds() + 1)  # a is paused past its lease
    assert await inbox.claim("slack/C1", "b:1")
    taken_over = await inbox.next("slack/C1", "b:1")
    assert taken_over is not None and taken_over.abandoned
    assert taken_over.token != begun.token
    # a wakes up: it can neither go on under its old claim nor remove b's entry.
    assert not await inbox.hold("slack/C1", "a:1", begun.token)
    assert not await inbox.finish(begun, "a:1")
    assert await inbox.waiting() == 1
    assert await inbox.finish(taken_over, "b:1")
    assert not await inbox.release("slack/C1", "b:1")  # b lets it go: nothing waits

    # a takes the conversation anew: its old turn's token still holds nothing.
    await inbox.take("slack:E2", "slack/C1", _event(2), limit=10)
    assert await inbox.claim("slack/C1", "a:1")
    assert not await inbox.hold("slack/C1", "a:1", begun.token)
    fresh = await inbox.next("slack/C1", "a:1")
    assert fresh is not None and await inbox.hold("slack/C1", "a:1", fresh.token)
