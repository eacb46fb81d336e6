"""The dispatcher: drops duplicates and strangers, then queues events per conversation.

Events of one conversation run in order; different conversations run concurrently. The
number of waiting events is bounded, and an overloaded bot says it is busy.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping

from adapters.base import (
    Adapter,
    DeliveryError,
    Event,
    Message,
    NotTaken,
    ReactionEvent,
    SlashCommand,
)
from bot import metrics
from bot.approvals.service import ApprovalService
from bot.config.sections import BotSettings
from bot.context.scopes import channel_scope, user_scope
from bot.core.router import Router
from bot.errors import user_message
from bot.tasks import TaskTracker
from memory import Conflict, InvalidInput
from memory.errors import StoreUnavailable
from memory.seen_events import SeenEvents

_log = logging.getLogger(__name__)

BUSY_REPLY = "I'm busy with other requests right now; please ask again in a minute."
APOLOGY = "Sorry, something went wrong while handling that. It has been logged."
NOT_ALLOWED_REPLY = "I only take commands from the people and channels I am set up for here."
STOPPING_REPLY = "I am restarting right now; please ask again in a minute."
UNAVAILABLE_REPLY = (
    "Sorry, I could not take that: my storage is unavailable right now. "
    "Please try again in a few minutes."
)


class Dispatcher:
    """The event sink every adapter feeds."""

    def __init__(
        self,
        settings: BotSettings,
        router: Router,
        approvals: ApprovalService,
        seen: SeenEvents,
        adapters: Mapping[str, Adapter],
        tasks: TaskTracker,
    ) -> None:
        self.settings = settings
        self.router = router
        self.approvals = approvals
        self.seen = seen
        self.adapters = adapters
        self.tasks = tasks
        self._queues: dict[str, deque[Event]] = {}
        self._pending = 0
        self._accepting = True

    @property
    def pending(self) -> int:
        return self._pending

    def stop_accepting(self) -> None:
        self._accepting = False

    def allowed(self, event: Event) -> bool:
        user = event.author if isinstance(event, Message) else event.user
        if user.is_bot:
            return False
        if user_scope(user) in self.settings.admins:
            return True
        users, channels = self.settings.allowed_users, self.settings.allowed_channels
        if users and user_scope(user) not in users:
            return False
        conv = event.conversation
        return not (channels and not conv.is_dm and channel_scope(conv) not in channels)

    async def submit(self, event: Event) -> None:
        """Accept one event from an adapter; returns once it is queued (or dropped). While
        lorebot stops, raises `NotTaken` for any event but a command (which is answered)."""
        metrics.EVENTS_RECEIVED.labels(event.conversation.platform).inc()
        if not self._accepting:
            self._drop("stopping")
            if isinstance(event, SlashCommand):  # answered: the platform waits for one
                await self._answer_command(event, STOPPING_REPLY)
                return None
            raise NotTaken(f"lorebot is stopping: {event.conversation.platform} event not taken")
        try:
            allowed = self.allowed(event)
        except InvalidInput as exc:  # an id no scope can hold, even escaped
            _log.warning("dropped an event from %s: %s", event.conversation.platform, exc)
            return self._drop("unreadable id")
        if not allowed:
            await self._answer_command(event, NOT_ALLOWED_REPLY)
            return self._drop("not allowed")
        if isinstance(event, Message) and not (event.conversation.is_dm or event.mentions_bot):
            return self._drop("not addressed")
        key = f"{event.conversation.platform}:{event.event_id}"
        try:
            taken = await self._take(event, key)
        except StoreUnavailable:
            # Acknowledged by the platform but not recordable: say so rather than go quiet.
            _log.exception("could not record event %s; the database is unavailable", key)
            await self._say(event, UNAVAILABLE_REPLY)
            return self._drop("database unavailable")
        if not taken:
            return None
        self._pending += 1
        conversation = event.conversation.key
        queue = self._queues.get(conversation)
        if queue is not None:
            queue.append(event)
            return
        self._queues[conversation] = deque([event])
        self.tasks.spawn(self._drain(conversation), name=f"conversation {conversation}")

    async def _take(self, event: Event, key: str) -> bool:
        """Whether to queue the event. It is recorded as seen only once it is taken, so an
        event turned away while busy can be given again; a removed reaction forgets its
        add, so adding it again is a new decision."""
        if isinstance(event, ReactionEvent) and not event.added:
            await self.seen.forget_sighting(f"{event.conversation.platform}:{event.event_id}")
            self._drop("reaction removed")
            return False
        if await self.seen.seen(key):
            _log.info("dropped duplicate event %s", key)
            self._drop("duplicate")
            return False
        if self._pending >= self.settings.queue_size:
            _log.warning("queue full (%d events); turning away %s", self._pending, key)
            await self._say(event, BUSY_REPLY)
            self._drop("busy")
            return False
        if not await self.seen.first_sighting(key):  # taken by a concurrent delivery
            self._drop("duplicate")
            return False
        return True

    def _drop(self, reason: str) -> None:
        metrics.EVENTS_DROPPED.labels(reason).inc()

    async def _drain(self, conversation: str) -> None:
        queue = self._queues[conversation]
        try:
            while queue:
                event = queue.popleft()
                try:
                    await self.handle(event)
                finally:
                    self._pending -= 1
        finally:
            del self._queues[conversation]

    async def handle(self, event: Event) -> None:
        """Handle one event; a failure is logged and answered, never raised."""
        user = event.author if isinstance(event, Message) else event.user
        outcome = "handled"
        try:
            if isinstance(event, ReactionEvent):
                proposal = await self.approvals.on_reaction(event)
                outcome = f"proposal {proposal.id} {proposal.status}" if proposal else "ignored"
                if proposal is not None:
                    await self.router.after_decision(proposal)
            else:
                await self.router.handle(event)
        except Conflict as exc:
            outcome = f"closed proposal ({exc})"
        except DeliveryError as exc:
            outcome = "not delivered"  # the adapter logged what to fix; an apology would fail too
            if isinstance(event, SlashCommand):  # but a command's answer reaches the person
                await self._say(event, _not_posted(event, exc))
        except Exception as exc:
            message = user_message(exc)
            outcome = "user error" if message else "failed"
            if message is None:
                _log.exception("failed to handle event %s", event.event_id)
            await self._say(event, f"⚠️ {message}" if message else APOLOGY)
        _log.info(
            "%s conversation=%s person=%s outcome=%s",
            "reaction" if isinstance(event, ReactionEvent) else "message",
            event.conversation.key, user_scope(user), outcome,
        )  # fmt: skip

    async def _answer_command(self, event: Event, text: str) -> None:
        """A slash command turned away still gets its answer: the platform waits for one."""
        if isinstance(event, SlashCommand) and not event.author.is_bot:
            await self._say(event, text)

    async def _say(self, event: Event, text: str) -> None:
        try:
            if isinstance(event, SlashCommand):  # the person alone asked; they alone hear
                await event.answer(text)
                return
            await self.router.reply(event.conversation, text)
        except DeliveryError:
            pass
        except Exception:
            _log.exception("could not reply in %s", event.conversation.key)

    async def wait_idle(self) -> None:
        """Return when every queued event has been handled."""
        await self.tasks.wait()


def _not_posted(command: SlashCommand, exc: DeliveryError) -> str:
    """Why a command's card is not there, told to the person who typed it."""
    if command.conversation.is_dm:  # a DM between other people, which lorebot is not in
        return (
            "⚠️ I cannot post in this conversation, so nothing was proposed: use /lorebot "
            "in a DM with me or in a channel I am in."
        )
    return f"⚠️ I could not post the card here, so nothing was proposed: {exc}"
