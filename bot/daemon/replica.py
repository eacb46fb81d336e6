"""This process as one replica of its database: its row in `replicas` with a heartbeat,
and whether it leads.

Every replica answers Slack (each event comes to one of them); what must happen once for
the whole bot (the Discord gateway, scheduled jobs, finishing decisions made in the
shell, mending cut-short replies) is the leader's alone: `on_lead` starts it when this
replica takes the leader lock, `on_follow` stops it when the lock is lost. A leader that
cannot confirm its lock within `LEASE_S` of the last confirmation stops leading then
(`memory.postgres.leadership` says why nobody else can have taken it before).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from datetime import datetime

from bot import metrics
from bot.tasks import stop_if_asked
from memory.clock import Clock, utc_now
from memory.errors import StoreError
from memory.stores.leadership import LEASE_S, Leadership
from memory.stores.replicas import Replica, Replicas, Role

_log = logging.getLogger(__name__)

# How often a replica writes its heartbeat, and a leader confirms its lock (a standby
# tries to take it as often).
BEAT_S = 2.0
# Replicas started in this process: one in production, several in tests.
_STARTED = itertools.count(1)


def replica_id() -> str:
    """This process's id among the replicas: its host and process id (and a number from
    the second replica of one process on)."""
    number = next(_STARTED)
    suffix = "" if number == 1 else f"/{number}"
    return f"{socket.gethostname()}:{os.getpid()}{suffix}"


class ReplicaRole:
    """Runs this replica's heartbeat and leadership until cancelled (`run`)."""

    def __init__(
        self,
        replicas: Replicas,
        leadership: Leadership,
        on_lead: Callable[[], Awaitable[None]],
        on_follow: Callable[[], Awaitable[None]],
        *,
        clock: Clock = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        beat: bool = True,
        replica: str | None = None,
    ) -> None:
        self.replicas = replicas
        self.leadership = leadership
        self.on_lead = on_lead
        self.on_follow = on_follow
        self.clock = clock
        self.monotonic = monotonic
        self.id = replica or replica_id()
        metrics.REPLICA.info({"id": self.id})
        metrics.LEADING.set(0)
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.started_at: datetime = clock()
        self.leading = False
        # False for the one daemon of a SQLite file: a write every few seconds would
        # compete with imports for the file's one writer, to say what the lock file says.
        self.beat = beat
        self.beats = 0  # heartbeats written
        self._confirmed = 0.0

    @property
    def role(self) -> Role:
        return "leader" if self.leading else "standby"

    async def begin(self) -> bool:
        """The first try at the lock, at start; whether this replica leads."""
        await self._lead_or_follow()
        return self.leading

    async def run(self) -> None:
        """After `begin`: lead when the lock is free, stop when it is lost, beat
        throughout; on the way out, let the lock go and remove this replica's row."""
        beats = asyncio.create_task(self._beat_forever(), name="replica heartbeat")
        try:
            while True:
                await asyncio.sleep(BEAT_S)
                await self._lead_or_follow()
        finally:
            beats.cancel()
            await asyncio.gather(beats, return_exceptions=True)
            await self._leave()

    async def _lead_or_follow(self) -> None:
        # The lease counts from when a confirmation was asked, not answered: the server had
        # heard from this replica no earlier than that, so its keepalives end no sooner.
        asked = self.monotonic()
        if not self.leading:
            if await self.leadership.try_lead():
                self.leading, self._confirmed = True, asked
                metrics.LEADING.set(1)
                _log.info("replica %s leads", self.id)
                await self.on_lead()
            return
        left = LEASE_S - (asked - self._confirmed)
        if left > 0 and await self.leadership.confirm(within=left):
            self._confirmed = asked
            return
        self.leading = False
        metrics.LEADING.set(0)
        _log.warning(
            "replica %s stops leading: its leader lock was not confirmed within %.0f s",
            self.id,
            LEASE_S,
        )
        await self.on_follow()
        await self.leadership.release()

    async def _beat_forever(self) -> None:
        """The heartbeat, apart from the lock's loop: a write that waits on a busy or cut-off
        database must never hold back a leader's confirmation."""
        while self.beat:
            now = self.clock()
            try:
                await self.replicas.beat(
                    Replica(self.id, self.host, self.pid, self.role, self.started_at, now)
                )
                self.beats += 1
            except StoreError as exc:
                _log.warning("replica %s could not write its heartbeat: %s", self.id, exc)
            stop_if_asked()
            await asyncio.sleep(BEAT_S)

    async def _leave(self) -> None:
        if self.leading:
            self.leading = False
            metrics.LEADING.set(0)
            await self.on_follow()
        await self.leadership.release()
        if not self.beat:
            return
        try:
            await self.replicas.leave(self.id)
        except StoreError as exc:
            _log.warning("replica %s could not remove its row: %s", self.id, exc)
