"""A loop that lives through errors still ends when it is stopped, also when a library
below lost the stop (Python 3.11's `wait_for` returning a result that came with it)."""

from __future__ import annotations

import asyncio
import contextlib

from bot.tasks import stop_if_asked
from tests.support.polling import HANG_GUARD_S


async def test_a_loop_whose_stop_was_lost_below_ends_at_its_next_round() -> None:
    rounds = 0

    async def heartbeat() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            with contextlib.suppress(asyncio.CancelledError):  # lost, as wait_for loses it
                await asyncio.sleep(3600)
            stop_if_asked()
            await asyncio.sleep(0)

    beating = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)  # it is waiting inside its first round
    beating.cancel()
    await asyncio.wait([beating], timeout=HANG_GUARD_S)

    assert beating.cancelled() and rounds == 1


async def test_a_loop_that_was_not_stopped_goes_on() -> None:
    async def one_round() -> str:
        stop_if_asked()
        return "went on"

    assert await asyncio.create_task(one_round()) == "went on"
