"""What jobs work with: the stores, the model, the approval service and the adapters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from adapters.base import Adapter
from bot.approvals.service import ApprovalService
from bot.config.sections import JobsSettings
from bot.model.client import Model
from memory import NoteStore
from memory.clock import Clock
from memory.stores.conversations import ConversationLog
from memory.stores.daily_logs import DailyLogs
from memory.stores.events import EventLog
from memory.stores.inbox import Inbox
from memory.stores.job_runs import JobRuns
from memory.stores.proposals import ProposalStore
from memory.stores.seen_events import SeenEvents


@dataclass(frozen=True, slots=True)
class JobContext:
    settings: JobsSettings
    notes: NoteStore
    log: ConversationLog
    events: EventLog
    runs: JobRuns
    proposals: ProposalStore
    approvals: ApprovalService
    model: Model
    adapters: Mapping[str, Adapter]
    clock: Clock
    seen: SeenEvents
    daily_logs: DailyLogs
    inbox: Inbox
