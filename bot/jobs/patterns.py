"""Nightly pattern extraction (L2): repeated actions become a proposed convention.

Captured events are grouped by action over the window; a group with at least
`min_samples` events and no pattern yet is abstracted by the model and posted as a
proposal card in the channel where most of its events happened.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from adapters.base import ConversationRef, UserRef
from bot.jobs.context import JobContext
from bot.jobs.runner import ALL
from bot.model.structured import ask_structured
from memory import Category, NoteDraft, Scope
from memory.scope_ids import raw_id
from memory.stores.events import CapturedEvent
from memory.types import SUMMARY_MAX_CHARS, slugify

MAX_EXAMPLES = 8


class Pattern(BaseModel):
    """The convention the model abstracts from repeated actions."""

    topic: str = Field(description="a short kebab-case name for the convention")
    summary: str = Field(description="the convention in one line")
    details: str = Field(description="the rules, as a short bulleted list")


class PatternJob:
    name = "patterns"
    catch_up = True

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    def schedules(self) -> list[tuple[str, str]]:
        return [(ALL, self.ctx.settings.patterns_cron)]

    async def scopes(self, schedule_scope: str, fire_time: datetime) -> list[str]:
        return [ALL]

    async def run(self, scope: str, fire_time: datetime) -> str:
        start = fire_time - timedelta(days=self.ctx.settings.window_days)
        groups: defaultdict[str, list[CapturedEvent]] = defaultdict(list)
        for event in await self.ctx.events.fetch_since(start):
            if event.channel_scope is not None:
                groups[event.action].append(event)
        proposed = []
        for action, events in sorted(groups.items()):
            if len(events) < self.ctx.settings.min_samples:
                continue
            channel, _ = Counter(e.channel_scope for e in events).most_common(1)[0]
            assert channel is not None
            if await self.ctx.events.has_pattern(action, channel):
                continue
            await self._propose(action, channel, [e for e in events if e.channel_scope == channel])
            proposed.append(action)
        return f"proposed patterns for {', '.join(proposed)}" if proposed else "nothing new"

    async def _propose(self, action: str, channel: str, events: list[CapturedEvent]) -> None:
        examples = "\n".join(f"- {e.arguments}" for e in events[-MAX_EXAMPLES:])
        prompt = (
            f"A team repeated the action `{action}` {len(events)} times. From these examples, "
            "abstract the convention they follow (naming, values, order), so it can guide the "
            f"next time. Answer in JSON.\n\n{examples}"
        )
        pattern = await ask_structured(self.ctx.model, prompt, Pattern)
        person, _ = Counter(e.person for e in events).most_common(1)[0]
        latest = events[-1].conversation
        conversation = ConversationRef(
            latest["platform"], latest["channel_id"], False, None, latest.get("team_id")
        )
        user = Scope.parse(person)
        evidence = f"Evidence: {len(events)} `{action}` actions, the latest on " + ", ".join(
            f"{e.created_at:%Y-%m-%d}" for e in events[-3:]
        )
        draft = NoteDraft(
            Scope.parse(channel),
            f"pattern-{slugify(pattern.topic, 56)}",
            " ".join(pattern.summary.split())[:SUMMARY_MAX_CHARS],
            f"{pattern.details.strip()}\n\n{evidence}",
            category=Category.PATTERN,
            author="lorebot",
            source=f"pattern extraction of {action}",
            confidence=0.7,
        )
        proposal = await self.ctx.approvals.propose_save(
            conversation, UserRef(user.platform, raw_id(user.id)), draft
        )
        await self.ctx.events.mark_pattern(action, channel, proposal.id)
