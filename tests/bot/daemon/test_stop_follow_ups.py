"""The stop of a bot whose proposal follow-up round is in flight: a database driver may
turn the cancellation into an error of its own (psycopg cancels the query on the server,
anyio's cancel scopes take native cancellations in), and the follow-up loop, which logs
errors and tries again, must still end, or the stop would wait for it forever."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from memory.errors import StoreUnavailable
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import start_harness


async def test_a_stop_during_a_follow_up_round_that_turns_it_into_an_error_still_ends(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    in_round = asyncio.Event()
    fetch = h.bot.proposals.fetch_to_follow_up

    async def fetch_as_a_driver_would(*args: Any, **kwargs: Any) -> Any:
        in_round.set()
        try:
            await asyncio.sleep(30)  # a query the stop cuts short
        except asyncio.CancelledError:
            raise StoreUnavailable("canceling statement due to user request") from None
        return await fetch(*args, **kwargs)

    h.bot.proposals.fetch_to_follow_up = fetch_as_a_driver_would  # type: ignore[method-assign]
    await asyncio.wait_for(in_round.wait(), 10)  # the loop's next round is in the query
    async with asyncio.timeout(10):
        await h.bot.stop()
