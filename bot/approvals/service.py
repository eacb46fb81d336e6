"""Approval cards: post a proposal with ✅/❌, decide on the requester's or an admin's reaction.

Everything a card says after a decision is built from rows read back from the database,
never from the model's words.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from adapters.base import (
    ALWAYS,
    APPROVE,
    REJECT,
    Adapter,
    ConversationRef,
    DeliveryError,
    PostedMessage,
    ReactionEvent,
    ShowsButtons,
    UserRef,
    measure,
    shows_buttons,
)
from bot import metrics
from bot.approvals.buttons import APPROVE_LABEL, DECLINE_LABEL, card_buttons
from bot.approvals.cards import conversation_of
from bot.approvals.clicks import may_decide
from bot.approvals.closing import Closings
from bot.approvals.kinds.base import ProposalKind
from bot.approvals.kinds.note_forget import NOTE_FORGET_KIND
from bot.approvals.kinds.note_save import NOTE_SAVE_KIND
from bot.approvals.kinds.registry import get_kind
from bot.approvals.kinds.skill_create import SKILL_CREATE_KIND, SkillCreate
from bot.approvals.kinds.skill_load import SKILL_LOAD_KIND, SkillLoad
from bot.approvals.reminders import reminder_outcome
from bot.config.settings import Settings
from bot.context.scopes import channel_scope, user_scope
from bot.context.suspended import SuspendedTurn
from bot.context.turn import free_topic
from bot.fencing import still_held
from memory import Conflict, Note, NoteDraft, NoteStore
from memory.stores.actions import ActionLog
from memory.stores.events import EventLog
from memory.stores.proposals import NoteForget, NoteSave, Proposal, ProposalStore
from memory.stores.stores import Stores
from skills.types import Skill

_log = logging.getLogger(__name__)

SYSTEM = "lorebot"  # who closed a proposal nobody decided (`decided_by`)

READ_ONLY = "this channel's memory is read-only now, so nothing was changed"
# What a card's footer takes of a platform message.
FOOTER_ROOM = 200


def decided_line(proposal: Proposal) -> str:
    """The line under a decided card saying who decided it and when; nothing for a card
    nobody decided (expired, or closed by lorebot)."""
    if proposal.decided_by in (None, SYSTEM) or proposal.decided_at is None:
        return ""
    return f"\nDecided by {proposal.decided_by} at {proposal.decided_at:%Y-%m-%d %H:%M} UTC."


def build_approvals(
    settings: Settings,
    stores: Stores,
    adapters: Mapping[str, Adapter],
    closings: Closings | None = None,
) -> ApprovalService:
    """The approval service as the daemon and the CLI both use it, from settings."""
    return ApprovalService(
        stores.proposals,
        stores.notes,
        stores.actions,
        adapters,
        admins=frozenset(settings.bot.admins),
        ttl=timedelta(hours=settings.bot.proposal_ttl_hours),
        skill_root=settings.skills.user_root,
        events=stores.events,
        read_only=frozenset(settings.bot.read_only_channels),
        closings=closings,
    )


class ApprovalService:
    """Creates proposals with their cards and applies people's decisions."""

    def __init__(
        self,
        proposals: ProposalStore,
        notes: NoteStore,
        actions: ActionLog,
        adapters: Mapping[str, Adapter],
        *,
        admins: frozenset[str],
        ttl: timedelta,
        skill_root: Path | None = None,
        events: EventLog | None = None,
        read_only: frozenset[str] = frozenset(),
        closings: Closings | None = None,
    ) -> None:
        self.actions = actions
        self.closings = closings or Closings()  # what finishes a proposal nobody decided
        self.skill_root = skill_root
        self.events = events
        self.proposals = proposals
        self.notes = notes
        self.adapters = adapters
        self.admins = admins
        self.ttl = ttl
        self.read_only = read_only

    # --- proposing ------------------------------------------------------------------

    async def propose_save(
        self, conversation: ConversationRef, requester: UserRef, draft: NoteDraft
    ) -> Proposal:
        draft = self.notes.validate(draft)
        existing = await self.notes.fetch(draft.scope, draft.topic)
        if existing is not None and existing.private and not draft.private:
            # A public save never touches, quotes or reveals a private note: it becomes a
            # separate note of its own.
            draft = dataclasses.replace(draft, topic=await free_topic(self.notes, draft))
            existing = None
        expect = await self.notes.content_fingerprint(draft.scope, draft.topic)
        payload = NoteSave(draft, expect).to_json()
        card = NOTE_SAVE_KIND.card(draft, existing, conversation)
        return await self._propose(NOTE_SAVE_KIND, conversation, requester, payload, card)

    async def propose_forget(
        self, conversation: ConversationRef, requester: UserRef, note: Note
    ) -> Proposal:
        expect = await self.notes.content_fingerprint(note.scope, note.topic)
        payload = NoteForget(note.scope, note.topic, expect).to_json()
        card = NOTE_FORGET_KIND.card(note, conversation)
        return await self._propose(NOTE_FORGET_KIND, conversation, requester, payload, card)

    async def propose_skill_load(
        self,
        conversation: ConversationRef,
        requester: UserRef,
        skill: Skill,
        card_lines: list[str],
        turn: SuspendedTurn,
    ) -> Proposal:
        """Ask before a model-initiated load; `turn` is the suspended turn to resume."""
        payload = SkillLoad(skill.name, skill.sha256, str(skill.path)).to_json()
        card = SKILL_LOAD_KIND.card(skill.name, card_lines)
        return await self._propose(SKILL_LOAD_KIND, conversation, requester, payload, card, turn)

    async def propose_skill_create(
        self, conversation: ConversationRef, requester: UserRef, name: str, text: str
    ) -> Proposal:
        skill = SkillCreate(name, text)
        card = SKILL_CREATE_KIND.card(skill, self.skill_root)
        return await self._propose(
            SKILL_CREATE_KIND, conversation, requester, skill.to_json(), card
        )

    async def propose(
        self,
        kind: ProposalKind,
        conversation: ConversationRef,
        requester: UserRef,
        payload: Mapping[str, Any],
        card: str,
        turn: SuspendedTurn | None = None,
    ) -> Proposal:
        """Any proposal, for a tool that waits for a person: see `_propose`."""
        await still_held()  # the card goes out just after: the claim was just extended
        return await self._propose(kind, conversation, requester, payload, card, turn)

    async def _propose(
        self,
        kind: ProposalKind,
        conversation: ConversationRef,
        requester: UserRef,
        payload: Mapping[str, Any],
        card: str,
        turn: SuspendedTurn | None = None,
    ) -> Proposal:
        """A proposal stored, with the `turn` that waits for it, then its card posted with
        the ✅/❌ reactions; the card's first line gets the proposal id."""
        proposal = await self.proposals.create(
            kind.name,
            requester=user_scope(requester),
            platform=conversation.platform,
            conversation=dataclasses.asdict(conversation),
            payload=payload if turn is None else {**payload, "turn": turn.to_json()},
            ttl=self.ttl,
        )
        first, _, rest = card.partition("\n")
        card = f"{first} (proposal #{proposal.id})" + (f"\n{rest}" if rest else "")
        await self._post_card(proposal, conversation, requester, card, kind.verb)
        return await self.proposals.fetch(proposal.id)

    async def _post_card(
        self,
        proposal: Proposal,
        conversation: ConversationRef,
        requester: UserRef,
        text: str,
        verb: str,
    ) -> None:
        """Post the card with its buttons where the platform shows them, and ✅/❌ under it
        either way: a reaction decides as a click does."""
        adapter = self.adapters[conversation.platform]
        footer = self._footer(requester, verb, buttons=shows_buttons(adapter))
        try:
            if isinstance(adapter, ShowsButtons) and adapter.shows_buttons:
                kind = get_kind(proposal.kind)  # ♾️ that allows more than this card
                always = (
                    kind.always_approvable()
                    and kind.allowance(proposal.payload) is not None
                    and not conversation.is_dm
                )
                shown = card_buttons(proposal, always=always)
                posted = await adapter.send_card(conversation, f"{text}\n{footer}", shown)
            else:
                posted = await adapter.send(conversation, f"{text}\n{footer}")
        except DeliveryError as exc:
            # Without a card nobody can decide it: close it now, not when it expires.
            reason = f"its card could not be posted: {exc}"
            await self.proposals.refuse(proposal.id, reason, decided_by=SYSTEM)
            raise
        await self.proposals.attach_card(
            proposal.id, posted.conversation.channel_id, posted.message_id
        )
        for emoji in (APPROVE, REJECT):
            await adapter.add_reaction(posted, emoji)

    def _footer(self, requester: UserRef, verb: str, *, buttons: bool) -> str:
        hours = self.ttl.total_seconds() / 3600
        who = requester.name or requester.id
        how = (
            f"Click {APPROVE_LABEL} (or react {APPROVE}) to {verb}, {DECLINE_LABEL} "
            f"(or {REJECT}) to discard."
            if buttons
            else f"React {APPROVE} to {verb} or {REJECT} to discard."
        )
        return f"{how} Only {who} or an admin can decide; this expires in {hours:g} h."

    # --- deciding -------------------------------------------------------------------

    def may_decide(self, proposal: Proposal, user_scope: str) -> bool:
        """The requester or an admin; only an admin where the action's server says so."""
        return may_decide(proposal, user_scope, self.admins)

    def fits_card(self, conversation: ConversationRef, text: str) -> bool:
        """Whether a card with this text fits one message of the platform, footer included,
        counted as the platform counts it (Slack's escaping makes `&` five characters)."""
        adapter = self.adapters.get(conversation.platform)
        if adapter is None:
            return len(text) + FOOTER_ROOM <= 4000
        return measure(adapter)(text) + FOOTER_ROOM <= adapter.max_message_chars

    async def on_reaction(self, event: ReactionEvent) -> Proposal | None:
        """Apply a ✅/❌ on a card (or an admin's ♾️ on an action's card: approve, and allow
        that tool here from now on); anything else, or from anyone else, changes nothing."""
        if not event.added or event.emoji not in (APPROVE, REJECT, ALWAYS):
            return None
        conv = event.conversation
        proposal = await self.proposals.fetch_by_card(
            conv.platform, conv.channel_id, event.target_message_id
        )
        if proposal is None:
            return None
        if not self.may_decide(proposal, user_scope(event.user)):
            _log.info(
                "ignored %s on proposal %d by %s: only %s or an admin decides",
                event.emoji,
                proposal.id,
                user_scope(event.user),
                proposal.requester,
            )
            return None
        if event.emoji == ALWAYS:
            return await self._approve_always(proposal, event)
        return await self.decide(
            proposal.id, approve=event.emoji == APPROVE, by=user_scope(event.user)
        )

    async def _approve_always(self, proposal: Proposal, event: ReactionEvent) -> Proposal | None:
        who = user_scope(event.user)
        conversation = conversation_of(proposal)
        kind = get_kind(proposal.kind)
        if not kind.always_approvable() or who not in self.admins or conversation.is_dm:
            _log.info("ignored ♾️ on proposal %d by %s: only admins, on actions", proposal.id, who)
            return None
        decided = await self.decide(proposal.id, approve=True, by=who)
        allows = kind.allowance(proposal.payload)
        if allows is None:
            return decided  # e.g. a skill script: every run asks, whatever an admin allowed
        where = channel_scope(conversation)
        allowance = await self.actions.allow(where, allows.tool, who, allows.server_id)
        _log.info("%s allowed %s in %s (allowance %d)", who, allows.tool, where, allowance.id)
        return decided

    async def decide(self, proposal_id: int, *, approve: bool, by: str) -> Proposal:
        """Decide a proposal and carry it out. The card is finished by `follow_up`, by
        whichever process has the platform connected; an expired one is marked expired."""
        await still_held()
        try:
            proposal = await self.proposals.fetch(proposal_id)
            if approve and self._now_read_only(proposal):
                proposal = await self.proposals.refuse(proposal_id, READ_ONLY, decided_by=by)
            else:
                proposal = await self.proposals.decide(proposal_id, approve=approve, decided_by=by)
        except Conflict:
            for expired in await self.proposals.expire_due():
                await self.closings.finish(expired, self.follow_up)
            raise
        if proposal.status == "approved":
            proposal = await get_kind(proposal.kind).carry_out(proposal, self)
        _log.info("proposal %d %s by %s (%s)", proposal.id, proposal.status, by, proposal.outcome)
        metrics.PROPOSALS.labels(proposal.kind, proposal.status).inc()
        if proposal.status == "approved":
            await self.capture(proposal)
        return proposal

    def _now_read_only(self, proposal: Proposal) -> bool:
        """Whether the proposal would change memory from a channel that is read-only now
        (it may have become read-only after the card was posted)."""
        conversation = conversation_of(proposal)
        return (
            get_kind(proposal.kind).writes_memory
            and not conversation.is_dm
            and channel_scope(conversation) in self.read_only
        )

    async def follow_up(self, proposal: Proposal) -> bool:
        """Finish a decided proposal's card, once across processes. False when another
        caller did, or this process has no connection to the card's platform."""
        if proposal.platform not in self.adapters:
            return False
        if not await self.proposals.claim_follow_up(proposal.id):
            return False
        await self.update_card(proposal)
        return True

    async def capture(self, proposal: Proposal) -> None:
        """Record an applied change as an event for pattern extraction (L1)."""
        arguments = get_kind(proposal.kind).captured(proposal)
        if self.events is None or arguments is None:
            return  # e.g. an action: captured when it has run
        conversation = conversation_of(proposal)
        await self.events.capture(
            proposal.kind,
            arguments,
            outcome=proposal.outcome or "approved",
            conversation=proposal.conversation,
            channel_scope=None if conversation.is_dm else channel_scope(conversation),
            person=proposal.requester,
        )

    async def expire(self) -> int:
        """Mark overdue proposals expired and say so on their cards."""
        expired = await self.proposals.expire_due()
        for proposal in expired:
            await self.closings.finish(proposal, self.follow_up)
        return len(expired)

    async def update_card(self, proposal: Proposal) -> None:
        """Finish a decided card (its outcome, who decided it and when, no buttons), then
        the DMs that reminded people of it."""
        adapter = self.adapters.get(proposal.platform)
        if adapter is None or proposal.card_message_id is None:
            return
        text = await self.outcome_text(proposal) + decided_line(proposal)
        card = PostedMessage(conversation_of(proposal), proposal.card_message_id)
        try:
            await adapter.edit(card, text)
        except Exception:
            _log.exception("could not edit the card of proposal %d", proposal.id)
        try:
            reminders = await self.proposals.fetch_reminders(proposal.id)
        except Exception:
            _log.exception("could not read the reminders of proposal %d", proposal.id)
            return
        for channel, message in reminders:
            dm = PostedMessage(ConversationRef(proposal.platform, channel, is_dm=True), message)
            try:
                await adapter.edit(dm, reminder_outcome(proposal))
            except Exception:
                _log.exception("could not edit a reminder of proposal %d", proposal.id)

    async def outcome_text(self, proposal: Proposal) -> str:
        """The card's final text, from the database rows, not from the model."""
        return await get_kind(proposal.kind).outcome_text(proposal, self)
