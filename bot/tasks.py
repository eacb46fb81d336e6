"""One helper for background tasks: named, referenced, and their failures logged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

_log = logging.getLogger(__name__)


def stop_if_asked() -> None:
    """In a loop that lives through errors: end it when its task was asked to stop. A
    library below may have answered the stop with an error (a driver closing its connection
    mid-statement), or lost it (Python 3.11's `wait_for` returning a result that came with
    it); the loop would then run on, and whoever awaits it, `stop()`, wait forever."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class TaskTracker:
    """Keeps a reference to every task it starts and routes its exception to the log."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            _log.error("task %s failed", task.get_name(), exc_info=exc)

    def __len__(self) -> int:
        return len(self._tasks)

    async def wait(self) -> None:
        """Wait for running tasks, and the ones they start, to finish."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks))
