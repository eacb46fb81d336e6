"""What only the leading replica does, started when it takes the lead and stopped when it
loses it: the leader-only platforms' connections (Discord), scheduled jobs with the
catch-up of what the last leader missed, expiring stale cards, finishing decisions made
in the shell, and mending replies a crash cut short."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from adapters.base import Adapter, EventSink
from bot.core.live_reply import mend_cut_replies
from bot.daemon.supervision import Supervisor
from bot.jobs.runner import JobRunner
from bot.tasks import TaskTracker
from memory.stores.inbox import Inbox
from memory.stores.live_replies import LiveReplies

_log = logging.getLogger(__name__)


class LeaderDuties:
    """Started by `lead` (which returns at once: connecting can take a while) and stopped
    by `follow`; both are safe to call in any order and more than once."""

    def __init__(
        self,
        adapters: Mapping[str, Adapter],
        leader_only: Sequence[str],
        sink: EventSink,
        supervisor: Supervisor,
        live_replies: LiveReplies,
        inbox: Inbox,
        jobs: JobRunner | None,
        steps: Sequence[Callable[[], Coroutine[Any, Any, object]]],
        loops: Sequence[tuple[str, Callable[[], Coroutine[Any, Any, object]]]],
    ) -> None:
        self.adapters = adapters
        self.leader_only = [name for name in leader_only if name in adapters]
        self.sink = sink
        self.supervisor = supervisor
        self.live_replies = live_replies
        self.inbox = inbox
        self.jobs = jobs
        self.steps = steps  # awaited in order when the lead is taken
        self.loops = loops  # (name, loop) run while leading
        self._starting: asyncio.Task[None] | None = None
        self._tasks = TaskTracker()
        self._connected: list[Adapter] = []
        self._first = True  # the duties' first start, as lorebot starts

    @property
    def connected(self) -> list[str]:
        """The leader-only platforms this replica is connected to."""
        return [adapter.platform for adapter in self._connected]

    async def lead(self) -> None:
        if self._starting is None:
            self._starting = asyncio.create_task(self._start(), name="leader duties")

    async def started(self) -> None:
        """Wait until the duties `lead` began have all started."""
        if self._starting is not None:
            await asyncio.shield(self._starting)

    async def _start(self) -> None:
        try:
            await self._start_duties()
        finally:
            self._first = False

    async def _start_duties(self) -> None:
        for name in self.leader_only:
            adapter = self.adapters[name]
            self.supervisor.hold(name)
            try:
                await adapter.start(self.sink)
            except Exception:
                if self._first:  # at start, as when lorebot runs alone: it does not start
                    raise
                _log.exception("the leader could not connect %s", name)
                continue
            self._connected.append(adapter)
            _log.info("adapter %s started (this replica leads)", name)
        for adapter in self.adapters.values():
            self._tasks.spawn(self._mend(adapter), name=f"mend {adapter.platform} replies")
        for step in self.steps:
            try:
                await step()
            except Exception:
                if self._first:
                    raise
                _log.exception("the leader could not finish %s", step.__name__)
        if self.jobs is not None:
            self.jobs.start()
            self._tasks.spawn(self.jobs.catch_up(), name="job catch-up")
        for name, loop in self.loops:
            self._tasks.spawn(loop(), name=name)

    async def _mend(self, adapter: Adapter) -> None:
        """Mend the cut-short replies of conversations no replica works on now: those a
        live replica holds are its replies still being written, and those with events
        waiting are mended by whoever takes them up (`Dispatcher`)."""
        held = await self.inbox.fetch_busy()
        await mend_cut_replies(adapter, self.live_replies, lambda key: key not in held)

    async def follow(self) -> None:
        """Stop every duty at once: a replica that lost the lead may already have a
        successor."""
        starting, self._starting = self._starting, None
        if starting is None:
            return
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await self._tasks.cancel_all()
        if self.jobs is not None:
            await self.jobs.shutdown()
        connected, self._connected = self._connected, []
        for adapter in connected:
            await adapter.close()
            _log.info("adapter %s closed (this replica no longer leads)", adapter.platform)
        for name in self.leader_only:
            self.supervisor.release(name)
