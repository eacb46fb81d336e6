"""Copying a database from one engine to another (`lorebot db copy`): which tables hold
lorebot's data, in an order that keeps every reference valid, and what a source offers.

Vectors are not copied: the target engine makes them again from the notes and messages
with the configured embedding model. Word indexes are each engine's own and are rebuilt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

# Parents before children (a change set's items after it, a message's words after it).
# The console's links and sessions are not copied: people sign in again on the new one.
TABLES = (
    "notes",
    "note_changes",
    "note_change_items",
    "proposals",
    "card_reminders",
    "seen_events",
    "messages",
    "summaries",
    "skill_activations",
    "events",
    "job_runs",
    "daily_logs",
    "patterns",
    "live_replies",
    "actions",
    "action_allowances",
    "model_slips",
    "inbox",
)
BATCH = 5000


class TableSource(Protocol):
    """The rows of a database's tables, read as they are."""

    @property
    def where(self) -> str:
        """The source, as messages name it."""
        ...

    async def columns(self, table: str) -> list[str]: ...

    async def count(self, table: str) -> int: ...

    def batches(
        self, table: str, columns: Sequence[str], size: int = BATCH
    ) -> AsyncIterator[list[tuple[object, ...]]]:
        """The rows of `table` (those `columns`, in that order), by id where it has one."""
        ...
