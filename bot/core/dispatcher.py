"""The dispatcher: drops duplicates and strangers, then hands events to the inbox, where
they wait per conversation until handled.

Events of one conversation run in order and one at a time, across every replica of the
database: the replica holding the conversation's claim handles them (`memory.stores.inbox`).
Different conversations run concurrently. The number of waiting events is bounded, and
an overloaded bot says it is busy. Slash commands are not kept: they are answered through
the connection that brought them, at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence

from adapters.base import (
    Adapter,
    Answer,
    ButtonClick,
    DeliveryError,
    Event,
    Message,
    NotTaken,
    ReactionEvent,
    SlashCommand,
)
from bot import metrics
from bot.approvals.clicks import Refusal
from bot.approvals.service import ApprovalService
from bot.backoff import Backoff
from bot.config.sections import BotSettings
from bot.context.scopes import channel_scope, user_scope
from bot.core.decisions import Decisions, typed_decision
from bot.core.event_payload import from_payload, redacted, to_payload
from bot.core.handling import Handler
from bot.core.replies import (
    ABANDONED_REPLY,
    BUSY_REPLY,
    NOT_ALLOWED_REPLY,
    STOPPING_REPLY,
    UNAVAILABLE_REPLY,
)
from bot.core.router import Router
from bot.fencing import Claim, under
from bot.tasks import TaskTracker, stop_if_asked
from memory import InvalidInput
from memory.errors import StoreError, StoreUnavailable
from memory.stores.inbox import CLAIM_LEASE, Inbox, InboxEntry, Next
from memory.stores.seen_events import SeenEvents

_log = logging.getLogger(__name__)

# How often the claims being worked on are renewed, and conversations nobody handles
# (those of a replica that stopped) are looked for.
KEEP_S = 2.0


class Dispatcher:
    """The event sink every adapter feeds."""

    def __init__(
        self,
        settings: BotSettings,
        router: Router,
        approvals: ApprovalService,
        seen: SeenEvents,
        inbox: Inbox,
        adapters: Mapping[str, Adapter],
        tasks: TaskTracker,
        *,
        holder: str,
        platforms: Callable[[], Collection[str]] | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.settings = settings
        self.router = router
        self.approvals = approvals
        self.seen = seen
        self.inbox = inbox
        self.adapters = adapters
        self.tasks = tasks
        self.holder = holder  # this replica, as the claims name it
        # The platforms this replica answers on now (a standby has no Discord connection).
        self.platforms = platforms or (lambda: list(adapters))
        self.secrets = tuple(secrets)  # lorebot's own: redacted from every event's text
        self.decisions = Decisions(approvals.proposals, approvals.admins, adapters)
        self.handler = Handler(router, approvals, self.decisions)
        self._draining: set[str] = set()  # conversations a task of this replica works on
        self._woken: set[str] = set()  # … and that were given an event meanwhile
        self._accepting = True
        # When each platform's latest event reached this replica (time.monotonic()).
        self.last_event_at: dict[str, float] = {}

    @property
    def pending(self) -> int:
        """Conversations this replica is handling events of."""
        return len(self._draining)

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
        self.last_event_at[event.conversation.platform] = time.monotonic()
        # From here on the message is what the history keeps: nothing after this (the
        # inbox's table, recall, the model, a log line) gets a credential it holds.
        event = redacted(event, self.secrets)
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
            if isinstance(event, ButtonClick) or (
                isinstance(event, SlashCommand) and typed_decision(event.text)
            ):
                return await self._take_decision(event, key)
            if isinstance(event, SlashCommand):
                if await self._take_command(event, key):
                    self.tasks.spawn(self.handle(event), name=f"command {key}")
                return None
            taken, claimed = await self._take(event, key)
        except StoreUnavailable:
            # Acknowledged by the platform but not recordable: say so rather than go quiet.
            _log.exception("could not record event %s; the database is unavailable", key)
            await self._say(event, UNAVAILABLE_REPLY)
            return self._drop("database unavailable")
        if taken or claimed:  # a claim taken is worked on, whatever else waits
            self._wake(event.conversation.key, claimed=claimed)
        return None

    async def _take_decision(self, event: ButtonClick | SlashCommand, key: str) -> None:
        """A click or a typed decision: refused at once (answered to the person after the
        platform's acknowledgement), or kept as the reaction it asks for."""
        found = await self.decisions.reaction_for(event)
        if not isinstance(found, Refusal) and not self.allowed(found):  # the card's channel
            found = Refusal("not allowed", NOT_ALLOWED_REPLY)
        if isinstance(found, Refusal):
            self._drop("decision refused")
            self.tasks.spawn(self._say(event, found.text), name=f"refusal {key}")
            return
        self.decisions.wait(key, event, found)
        await self._keep_decision(found, key, event.answer)

    async def take_checked_decision(self, card: ReactionEvent, answer: Answer) -> str | None:
        """A decision made beside the platforms (the web console) and checked there, kept
        as the reaction it asks for, in its conversation's order; `answer` hears how it
        went. Its key in the inbox, for the caller to forget its answer by; None when
        lorebot is stopping, the card's channel is not allowed or the inbox is full
        (`answer` is told why)."""
        if not self._accepting:
            await answer(STOPPING_REPLY)
            return None
        if not self.allowed(card):  # the card's channel, as for a click
            await answer(NOT_ALLOWED_REPLY)
            return None
        key = f"{card.conversation.platform}:{card.event_id}"
        self.decisions.wait_answer(key, answer)
        try:
            taken = await self._keep_decision(card, key, answer)
        except BaseException:
            self.decisions.forget(key)
            raise
        return key if taken else None

    async def _keep_decision(self, card: ReactionEvent, key: str, tell: Answer) -> bool:
        taken, claimed = await self._take(card, key, tell=tell)
        if not taken:
            self.decisions.forget(key)
        if taken or claimed:
            self._wake(card.conversation.key, claimed=claimed)
        return taken

    async def _take(
        self, event: Message | ReactionEvent, key: str, *, tell: Answer | None = None
    ) -> tuple[bool, bool]:
        """Whether the event was stored to be handled, and whether its conversation was
        claimed along (asked when no task of this replica works on it, which would).
        It is recorded as seen only once it is taken, so an event turned away while busy
        can be given again; a removed reaction forgets its add, so adding it again is a new
        decision. A full inbox is told to `tell`, who asked for the event (a clicker)."""
        if isinstance(event, ReactionEvent) and not event.added:
            await self.seen.forget_sighting(key)
            self._drop("reaction removed")
            return False, False
        conversation = event.conversation.key
        outcome, claimed = await self.inbox.take_and_claim(
            key,
            conversation,
            to_payload(event, self.secrets),
            limit=self.settings.queue_size,
            holder=None if conversation in self._draining else self.holder,
        )
        if outcome == "duplicate":
            _log.info("dropped duplicate event %s", key)
            self._drop("duplicate")
        elif outcome == "full":  # told to whoever asked: a click's clicker, not the card
            await self._turn_away(event, key, tell)
        return outcome == "taken", claimed

    async def _take_command(self, command: SlashCommand, key: str) -> bool:
        if await self.seen.seen(key):
            self._drop("duplicate")
            return False
        if await self.inbox.waiting() >= self.settings.queue_size:
            await self._turn_away(command, key)
            return False
        if not await self.seen.first_sighting(key):  # taken by a concurrent delivery
            self._drop("duplicate")
            return False
        return True

    async def _turn_away(self, event: Event, key: str, tell: Answer | None = None) -> None:
        _log.warning("queue full (%d events); turning away %s", self.settings.queue_size, key)
        if tell is None:
            await self._say(event, BUSY_REPLY)
        else:
            with contextlib.suppress(DeliveryError):
                await tell(BUSY_REPLY)
        self._drop("busy")

    def _drop(self, reason: str) -> None:
        metrics.EVENTS_DROPPED.labels(reason).inc()

    def _wake(self, conversation: str, *, claimed: bool = False) -> None:
        """Handle what waits in `conversation` (`claimed` for this replica already), unless
        a task of this replica already does."""
        if conversation in self._draining:
            self._woken.add(conversation)
            return
        self._draining.add(conversation)
        self.tasks.spawn(self._drain(conversation, claimed), name=f"conversation {conversation}")

    async def _drain(self, conversation: str, claimed: bool = False) -> None:
        """Claim the conversation (unless `claimed`) and handle its events until none
        waits; when another replica holds it, that replica handles them. While the database
        fails, it tries again: the claim stays this replica's until it lapses."""
        backoff = Backoff(0.2, KEEP_S)
        try:
            while True:
                if not self._accepting:  # stopping: what waits goes to another replica
                    await self._let_go(conversation)
                    return
                try:
                    self._woken.discard(conversation)
                    begun_at = time.monotonic()
                    if claimed:
                        first = await self.inbox.next_or_release(conversation, self.holder)
                    else:
                        first = await self.inbox.claim_next(conversation, self.holder)
                    claimed = False
                    await self._handle_waiting(conversation, first, begun_at)
                    if conversation not in self._woken:  # given an event as it was let go
                        return
                except StoreError as exc:
                    stop_if_asked()
                    _log.warning("could not go on with %s, trying again: %s", conversation, exc)
                    await asyncio.sleep(backoff.next_delay())
        finally:
            self._draining.discard(conversation)
            self._woken.discard(conversation)

    async def _handle_waiting(self, conversation: str, found: Next, begun_at: float) -> None:
        """Handle the entry `found` (begun at `begun_at`) and those after it, each finished
        and the next begun in one round trip, until the conversation is let go."""
        while True:
            if not isinstance(found, InboxEntry):
                if not found:  # let go, or no longer this replica's
                    return
                begun_at = time.monotonic()
                found = await self._next(conversation)  # kept: an entry came as it was let go
                continue
            # A turn cut at the shutdown timeout is left begun: whoever takes the
            # conversation up says so (`handle` itself raises nothing else).
            claim = Claim(self.inbox, conversation, self.holder, found.token, extended_at=begun_at)
            with under(claim):
                await self._handle_entry(found)
            begun_at = time.monotonic()
            found = await self._finish(found, conversation)

    async def _next(self, conversation: str) -> Next:
        if not self._accepting:  # stopping: what waits goes to another replica
            await self._let_go(conversation)
            return False
        return await self.inbox.next_or_release(conversation, self.holder)

    async def _let_go(self, conversation: str) -> None:
        """Let the conversation go (lorebot stops), so another replica takes up what waits
        at once; should the database fail, the claim lapses after its lease."""
        try:
            await self.inbox.let_go(conversation, self.holder)
        except StoreError as exc:
            _log.warning("could not let %s go; it lapses in a moment: %s", conversation, exc)

    async def _finish(self, entry: InboxEntry, conversation: str) -> Next:
        """Remove a handled entry and begin the next, trying again while the database
        fails: one left behind would be taken as a stopped replica's half-handled event.
        Given up on once the claim may have lapsed."""
        backoff = Backoff(0.2, KEEP_S)
        deadline = asyncio.get_running_loop().time() + CLAIM_LEASE.total_seconds()
        while True:
            try:
                if self._accepting:
                    finished, found = await self.inbox.finish_next(entry, conversation, self.holder)
                else:
                    finished, found = await self.inbox.finish(entry, self.holder), True
                if not finished:  # taken over, or removed by a try that failed to answer
                    _log.warning(
                        "event %s was no longer this replica's to remove: its conversation "
                        "was taken over, or an earlier try removed it",
                        entry.key,
                    )
                return found
            except StoreError as exc:
                stop_if_asked()
                if asyncio.get_running_loop().time() > deadline:
                    _log.error("could not mark event %s handled: %s", entry.key, exc)
                    return True  # the next round trip says whether it is still ours
                await asyncio.sleep(backoff.next_delay())

    async def _handle_entry(self, entry: InboxEntry) -> None:
        try:
            event = from_payload(entry.payload)
        except (KeyError, TypeError, ValueError) as exc:  # kept by another lorebot version
            _log.error(
                "dropped waiting event %s, which this lorebot cannot read: %r", entry.key, exc
            )
            self._drop("unreadable")
            return
        if entry.abandoned and isinstance(event, Message):
            # Begun by a replica that stopped: its turn may have run part-way, so it is not
            # run again. A decision (a reaction) applies once however often it is handled.
            _log.warning("event %s was left half-handled by a stopped replica", entry.key)
            self._drop("abandoned")
            if not await self.router.mend(event.conversation):
                await self._say(event, ABANDONED_REPLY)
            return
        await self.handle(event)

    async def keep(self, *, sweep: bool = True) -> None:
        """Renew the claims this replica works on and, with `sweep`, take up conversations
        nobody handles (a stopped replica's, or what the last start left), every `KEEP_S`,
        until cancelled."""
        while True:
            try:
                if self._draining:
                    await self.inbox.renew(self.holder, sorted(self._draining))
                if sweep and self._accepting:
                    for conversation in await self.inbox.fetch_unclaimed(list(self.platforms())):
                        if conversation not in self._draining:
                            _log.info("taking up the waiting events of %s", conversation)
                            self._wake(conversation)
            except StoreError as exc:
                _log.warning("could not renew or look for waiting conversations: %s", exc)
            stop_if_asked()
            await asyncio.sleep(KEEP_S)

    async def handle(self, event: Message | ReactionEvent) -> None:
        await self.handler.handle(event)

    async def _answer_command(self, event: Event, text: str) -> None:
        await self.handler.answer_turned_away(event, text)

    async def _say(self, event: Event, text: str) -> None:
        await self.handler.say(event, text)

    async def wait_idle(self) -> None:
        """Return when every queued event has been handled."""
        await self.tasks.wait()
