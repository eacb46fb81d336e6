"""Waiting for a condition that another task or process brings about, with a deadline.

The deadline only stops a test that would otherwise hang: it is generous, so a busy
machine is slow, not wrong. A test that asserts something does *not* happen passes its
own short `within`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

HANG_GUARD_S = 30.0


async def until(condition: Callable[[], object], within: float = HANG_GUARD_S) -> None:
    """Poll `condition` (plain or async) until it holds, failing after `within` seconds."""
    async with asyncio.timeout(within):
        while True:
            holds = condition()
            if isinstance(holds, Awaitable):
                holds = await holds
            if holds:
                return
            await asyncio.sleep(0.005)
