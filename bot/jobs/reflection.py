"""Daily reflection: each active conversation's day becomes a log entry and a few lessons.

Lessons are notes of category `reflection` that expire after 30 days; a DM's go to the
person's private notes, a channel's to the channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from bot.cron import cron_trigger
from bot.jobs.context import JobContext
from bot.jobs.runner import ALL, previous_fire_time
from bot.model.structured import ask_structured
from memory import Category, NoteDraft, Scope
from memory.scope_ids import scope_id
from memory.stores.conversations import LoggedMessage
from memory.types import SUMMARY_MAX_CHARS

MAX_TRANSCRIPT_CHARS = 12000
MAX_LESSONS = 3


class Reflection(BaseModel):
    """The model's reflection on one conversation's day."""

    log: str = Field(description="what happened today, in a few sentences")
    # Only asked for in the schema: a model that gives more loses the extra lessons, not the
    # whole reflection.
    lessons: list[str] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_LESSONS})


def conversation_scope(conversation: str, messages: Sequence[LoggedMessage]) -> tuple[Scope, bool]:
    """Where a conversation's reflections go, and whether they are private."""
    if conversation.startswith("dm:"):
        person = next((m.author for m in messages if m.role == "user" and m.author), None)
        if person is not None:
            return Scope.parse(person), True
    platform, channel = conversation.removeprefix("dm:").split("/")[:2]
    return Scope.parse(f"channel:{platform}/{scope_id(channel)}"), False


class ReflectionJob:
    name = "reflection"
    catch_up = True

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    def schedules(self) -> list[tuple[str, str]]:
        return [(ALL, self.ctx.settings.reflection_cron)]

    def window(self, fire_time: datetime) -> tuple[datetime, datetime]:
        """From the previous firing to this one, so no message is reflected twice or never."""
        tz = ZoneInfo(self.ctx.settings.timezone)
        trigger = cron_trigger(self.ctx.settings.reflection_cron, tz)
        start = previous_fire_time(trigger, fire_time - timedelta(seconds=1))
        return (start or fire_time - timedelta(days=1)), fire_time

    async def _messages(self, fire_time: datetime) -> list[LoggedMessage]:
        start, end = self.window(fire_time)
        return await self.ctx.log.fetch_messages_between(start, end)

    async def scopes(self, schedule_scope: str, fire_time: datetime) -> list[str]:
        return sorted({m.conversation for m in await self._messages(fire_time)})

    async def run(self, scope: str, fire_time: datetime) -> str:
        messages = [m for m in await self._messages(fire_time) if m.conversation == scope]
        if not messages:
            return "no messages"
        transcript = "\n".join(f"{m.role}: {m.content}" for m in messages)[-MAX_TRANSCRIPT_CHARS:]
        prompt = (
            "Here is today's conversation between a team chat bot and its users. Write a short "
            "log of what happened (facts, decisions, open questions) and at most three short "
            "lessons the bot should remember to do better. Answer in JSON.\n\n" + transcript
        )
        reflection = await ask_structured(self.ctx.model, prompt, Reflection)
        day = fire_time.astimezone(ZoneInfo(self.ctx.settings.timezone)).date()
        target, private = conversation_scope(scope, messages)
        expires = self.ctx.clock() + timedelta(days=self.ctx.settings.reflection_ttl_days)
        drafts = [
            NoteDraft(
                target,
                f"reflection-{day.isoformat()}-{number}",
                " ".join(lesson.split())[:SUMMARY_MAX_CHARS],
                category=Category.REFLECTION,
                private=private,
                author="lorebot",
                source=f"reflection of {scope}",
                confidence=0.6,
                expires_at=expires,
            )
            for number, lesson in enumerate(reflection.lessons[:MAX_LESSONS], start=1)
            if lesson.strip()
        ]
        # Both writes describe the same day; the log is written last, so a failure before it
        # leaves the run to be retried in full (lesson saves are idempotent per topic).
        # Saved one by one, in one transaction: each lesson is a change of its own, which
        # the digest names (an import would be one change of them all).
        notes = self.ctx.notes
        if drafts:
            async with notes.db.transaction() as tx:
                for draft in drafts:
                    await notes.save_in(tx, notes.validate(draft), "lorebot", "reflection", None)
        await self.ctx.daily_logs.write(scope, day, reflection.log.strip())
        return f"logged {day}, {len(drafts)} lessons"
