"""Which replica of a database leads (`memory.postgres.leadership` on PostgreSQL). On
SQLite one daemon holds the database file's lock, so it always leads."""

from __future__ import annotations

from typing import Protocol

# A leader stops leading when its lock has not been confirmed for this long.
LEASE_S = 10.0


class Leadership(Protocol):
    """The leader lock of one database."""

    async def try_lead(self) -> bool:
        """Take the lock unless another replica holds it; False when it cannot now."""
        ...

    async def confirm(self, within: float) -> bool:
        """Whether the lock is still held, answered within `within` seconds; False means
        stop leading at once."""
        ...

    async def release(self) -> None: ...


class SoleLeadership:
    """The only lorebot of its database leads."""

    async def try_lead(self) -> bool:
        return True

    async def confirm(self, within: float) -> bool:
        return True

    async def release(self) -> None:
        return None
