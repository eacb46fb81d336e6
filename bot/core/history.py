"""A conversation's history in the prompt: its earlier turns, compacted into a stored
summary once they pass 80% of the model's context, and its recent daily logs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.config.settings import Settings
from bot.context.turn import TurnContext
from bot.core.prompt import estimate_tokens
from bot.model.client import Model, ModelUnavailable
from memory.clock import Clock
from memory.stores.conversations import ConversationLog
from memory.stores.conversations import History as StoredHistory

COMPACT_AT = 0.8


class History:
    """The history part of one agent's prompts."""

    def __init__(
        self,
        settings: Settings,
        model: Model,
        log: ConversationLog,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.model = model
        self.log = log
        self.clock = clock

    async def fetch_messages(
        self, ctx: TurnContext, prefix: str, history: StoredHistory
    ) -> list[dict[str, Any]]:
        """Earlier turns (`history`, as stored), compacted into a stored summary past 80% of
        the context."""
        entries = list(history.entries)
        budget = int(self.model.info.context_length * COMPACT_AT)
        used = estimate_tokens(prefix) + estimate_tokens(history.summary)
        used += sum(estimate_tokens(e.as_read) for e in entries)
        summary = history.summary
        if used > budget and len(entries) >= 2:
            older, entries = entries[: len(entries) // 2], entries[len(entries) // 2 :]
            summary = await self._summarise(summary, older)
            await self.log.compact(ctx.history_key, older[-1].id, summary)
        messages: list[dict[str, Any]] = []
        if summary:
            messages.append(
                {"role": "system", "content": f"Earlier in this conversation: {summary}"}
            )
        # Each message as the model read it before, so the prompt grows only at its end.
        messages += [{"role": e.role, "content": e.as_read} for e in entries]
        return messages

    async def _summarise(self, previous: str, entries: Sequence[Any]) -> str:
        transcript = "\n".join(f"{e.role}: {e.content}" for e in entries)
        prompt = (
            "Summarise this conversation in a few sentences, keeping names, decisions and "
            f"open questions.\n\nEarlier summary: {previous or '(none)'}\n\n{transcript}"
        )
        try:
            result = await self.model.chat([{"role": "user", "content": prompt}])
            return result.content.strip()
        except ModelUnavailable:
            return (previous + " " + transcript)[-2000:].strip()

    def days(self) -> list[date]:
        """The days whose logs a turn shows: today's and yesterday's, in the jobs' zone."""
        today = self.clock().astimezone(ZoneInfo(self.settings.jobs.timezone)).date()
        return [today, today - timedelta(days=1)]

    def daily_logs(
        self, found: Mapping[date, str], days: Sequence[date], budget: int
    ) -> list[tuple[str, str]]:
        """The logs `found` (by day) of `days` (today's and yesterday's), within `budget`
        bytes."""
        logs = []
        for label, day in zip(("today", "yesterday"), days, strict=True):
            text = found.get(day, "")
            if not text or budget <= 0:
                continue
            clipped = text.encode()[:budget].decode(errors="ignore")
            logs.append((f"{label} ({day.isoformat()})", clipped))
            budget -= len(clipped.encode())
        return logs
