"""Per-channel digests: what changed since the last successful digest of that channel.

The period always starts where the last successful one ended, so there is no gap and, as
the run is keyed by its fire time, no double post.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from adapters.base import ConversationRef, measure
from bot.jobs.context import JobContext
from bot.jobs.runner import parse_period
from bot.model.client import ModelUnavailable
from bot.split import split_message
from memory import Category, Scope
from memory.scope_ids import raw_id

MAX_LINES = 20


class DigestJob:
    name = "digest"
    catch_up = True

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    def schedules(self) -> list[tuple[str, str]]:
        return [(d.channel, d.cron) for d in self.ctx.settings.digests]

    async def scopes(self, schedule_scope: str, fire_time: datetime) -> list[str]:
        return [schedule_scope]

    async def period_start(self, channel: str, fire_time: datetime) -> datetime:
        last = await self.ctx.runs.fetch_last(self.name, channel, status="succeeded")
        if last is not None and parse_period(last.period) < fire_time:
            return parse_period(last.period)
        return fire_time - timedelta(days=1)

    async def run(self, scope: str, fire_time: datetime) -> str:
        channel = Scope.parse(scope)
        start = await self.period_start(scope, fire_time)
        lines = await self.changes(channel, start, fire_time)
        if not lines:
            return f"nothing new since {start:%Y-%m-%d %H:%M}Z; nothing posted"
        summary = await self.summary(lines)
        text = f"📰 Digest since {start:%Y-%m-%d %H:%M} UTC\n" + (
            f"{summary}\n\n" if summary else ""
        )
        text += "\n".join(lines[:MAX_LINES])
        if len(lines) > MAX_LINES:
            text += (
                f"\n… and {len(lines) - MAX_LINES} more (`lorebot notes history --scope {scope}`)"
            )
        adapter = self.ctx.adapters.get(channel.platform)
        if adapter is None:
            raise RuntimeError(f"no {channel.platform} adapter is running to post the digest")
        conversation = ConversationRef(channel.platform, raw_id(channel.id))
        for chunk in split_message(text, adapter.max_message_chars, measure(adapter)):
            await adapter.send(conversation, chunk)
        return f"posted {len(lines)} lines"

    async def changes(self, channel: Scope, start: datetime, end: datetime) -> list[str]:
        lines = []
        for change in await self.ctx.notes.fetch_changes_between(channel, start, end):
            if change.topic is None:  # an import (or its revert): this channel's notes of it
                what = "imported" if change.action == "import" else "reverted"
                lines.append(f"• {what}: {change.notes} notes (change {change.id})")
                continue
            state = change.after or change.before or {}
            summary = state.get("summary", "")
            category = state.get("category", "")
            label = {
                "create": "new",
                "update": "changed",
                "forget": "forgotten",
                "revert": "reverted",
            }.get(change.action, change.action)
            if category == Category.DECISION.value:
                label = f"decision ({label})"
            elif category == Category.PATTERN.value:
                label = f"pattern ({label})"
            lines.append(f"• {label}: `{change.topic}` — {summary}")
        for action in await self.ctx.approvals.actions.fetch_in_channel(str(channel), start, end):
            who = f", approved by {action.decided_by}" if action.decided_by else ""
            lines.append(
                f"• action `{action.tool}`: {action.outcome}, asked by {action.requester}{who}"
            )
        for proposal in await self.ctx.proposals.fetch_pending_in(channel.platform, channel.id):
            payload = proposal.payload
            what = payload.get("topic") or payload.get("name") or payload.get("tool", "")
            lines.append(f"• waiting for a decision: proposal #{proposal.id} `{what}`")
        questions = await self.ctx.log.count_questions(
            f"{channel.platform}/{channel.id}/", start, end
        )
        if questions:
            lines.append(f"• {questions} question{'s' if questions != 1 else ''} asked")
        return lines

    async def summary(self, lines: list[str]) -> str:
        """The model's one-paragraph summary, or nothing when it is unreachable."""
        prompt = "Summarise these team notes changes in two sentences:\n" + "\n".join(lines)
        try:
            result = await self.ctx.model.chat([{"role": "user", "content": prompt}])
        except ModelUnavailable:
            return ""
        return result.content.strip()
