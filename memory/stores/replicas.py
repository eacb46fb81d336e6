"""The running lorebot processes of one database: each replica's id, where it runs, since
when, whether it leads, and its latest heartbeat. A replica that stopped cleanly is
removed; one that stopped beating is shown as lost, and forgotten after `FORGET_AFTER`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

Role = Literal["leader", "standby"]

# A replica whose heartbeat is older than this is shown as lost (it beats every few s).
LOST_AFTER = timedelta(seconds=30)
# Lost replicas are forgotten after this long, by the next heartbeat of any replica.
FORGET_AFTER = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Replica:
    id: str
    host: str
    pid: int
    role: Role
    started_at: datetime
    heartbeat_at: datetime

    def lost(self, now: datetime) -> bool:
        return now - self.heartbeat_at > LOST_AFTER


class Replicas(Protocol):
    """The replicas table: one row per running replica."""

    async def beat(self, replica: Replica) -> None:
        """Write `replica`'s row as given (its heartbeat and role), forgetting replicas lost
        for longer than `FORGET_AFTER` meanwhile."""
        ...

    async def leave(self, replica_id: str) -> None:
        """Remove the row of a replica that stops."""
        ...

    async def fetch_all(self) -> list[Replica]:
        """Every replica with a row, leader first, then by start time."""
        ...
