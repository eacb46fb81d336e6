"""Waiting for a condition that another task or process brings about, with a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], within: float = 5.0) -> None:
    """Poll `condition` until it holds, failing after `within` seconds."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 (state outside the loop's reach)
            await asyncio.sleep(0.005)
