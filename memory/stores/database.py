"""What every storage engine's database offers: health, maintenance, backups and
transactions that span stores. `memory/sqlite/` implements it; nothing outside an engine
package speaks to a database driver."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Health:
    """What `lorebot doctor` says of a database."""

    integrity: str  # "ok", or what the integrity check found
    schema: int
    notes: int


class Transaction(Protocol):
    """One unit of writes across the stores of one database, from `Database.transaction()`:
    pass it to the stores' `*_in` methods, and their writes commit together when the block
    ends or roll back together on any exception. Each engine has its own kind; a store
    given another engine's raises `TypeError`."""


class Database(Protocol):
    """One open database of an engine."""

    @property
    def engine(self) -> str:
        """The engine and its driver, as `lorebot doctor` shows them."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        """A write transaction, rolled back on any exception."""
        ...

    async def fetch_schema_version(self) -> int:
        """The number of migrations this database has."""
        ...

    async def fetch_health(self) -> Health:
        """Integrity, schema and the count of notes, with the word index exercised."""
        ...

    async def checkpoint(self) -> bool:
        """Fold pending writes into the main file; False when it stayed busy (the next
        time will do it)."""
        ...

    async def backup_to(self, target: Path) -> None:
        """An online copy of the database at `target`, written atomically."""
        ...

    async def close(self) -> None:
        """Write what is pending and close; safe to call twice."""
        ...
