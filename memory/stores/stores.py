"""Every store of one database, as an engine opens them: what the daemon and the command
line hold instead of the stores' classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from memory.clock import Clock, utc_now
from memory.stores.index import INDEX_MAX_BYTES, INDEX_MAX_LINES
from memory.stores.notes import DEFAULT_MAX_NOTE_BYTES

if TYPE_CHECKING:
    from memory.stores.actions import ActionLog
    from memory.stores.active_skills import ActiveSkills
    from memory.stores.console import ConsoleSignIns
    from memory.stores.conversations import ConversationLog
    from memory.stores.daily_logs import DailyLogs
    from memory.stores.database import Database
    from memory.stores.events import EventLog
    from memory.stores.inbox import Inbox
    from memory.stores.job_runs import JobRuns
    from memory.stores.live_replies import LiveReplies
    from memory.stores.note_pages import NotePages
    from memory.stores.notes import NoteStore
    from memory.stores.proposals import ProposalStore
    from memory.stores.replicas import Replicas
    from memory.stores.seen_events import SeenEvents
    from memory.stores.slips import ModelSlips
    from memory.stores.turn_reads import TurnReads
    from memory.stores.vectors import VectorIndex


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """What every engine's stores are opened with: the clock, the note limits, and the
    configured secret values that no store ever keeps."""

    clock: Clock = utc_now
    max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES
    index_max_lines: int = INDEX_MAX_LINES
    index_max_bytes: int = INDEX_MAX_BYTES
    secrets: tuple[str, ...] = field(default=())


class Stores(Protocol):
    """The stores of one open database. An engine may build each on first use, so a
    one-shot command pays only for the stores it touches."""

    @property
    def db(self) -> Database: ...

    @property
    def notes(self) -> NoteStore: ...

    @property
    def log(self) -> ConversationLog: ...

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def proposals(self) -> ProposalStore: ...

    @property
    def actions(self) -> ActionLog: ...

    @property
    def events(self) -> EventLog: ...

    @property
    def job_runs(self) -> JobRuns: ...

    @property
    def seen(self) -> SeenEvents: ...

    @property
    def live_replies(self) -> LiveReplies: ...

    @property
    def daily_logs(self) -> DailyLogs: ...

    @property
    def active_skills(self) -> ActiveSkills: ...

    @property
    def turn_reads(self) -> TurnReads: ...

    @property
    def slips(self) -> ModelSlips: ...

    @property
    def inbox(self) -> Inbox: ...

    @property
    def replicas(self) -> Replicas: ...

    @property
    def note_pages(self) -> NotePages: ...

    @property
    def console(self) -> ConsoleSignIns: ...

    async def close(self) -> None:
        """Close the database, and the embedder's connections when it keeps some (the
        daemon's does; a one-shot command's has none)."""
        ...
