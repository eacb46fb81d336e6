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
    UserRef,
    measure,
)
from bot import metrics
from bot.approvals.cards import ACTION, conversation_of, outcome_text, quote, scope_label
from bot.approvals.closing import Closings
from bot.config.settings import Settings
from bot.context.scopes import channel_scope, user_scope
from bot.context.suspended import SuspendedTurn
from bot.context.turn import free_topic
from bot.fencing import still_held
from memory import Conflict, Note, NoteDraft, NoteStore
from memory.actions import ActionLog
from memory.events import EventLog
from memory.proposals import (
    NOTE_FORGET,
    NOTE_SAVE,
    SKILL_CREATE,
    SKILL_LOAD,
    Proposal,
    ProposalStore,
    note_save_payload,
)
from memory.stores import Stores
from skills.types import Skill, SkillError
from skills.writer import write_skill

_log = logging.getLogger(__name__)

SYSTEM = "lorebot"  # who closed a proposal nobody decided (`decided_by`)

READ_ONLY = "this channel's memory is read-only now, so nothing was changed"
# What a card's footer takes of a platform message.
FOOTER_ROOM = 200
# Proposals that change memory, refused in a read-only channel.
MEMORY_WRITES = frozenset({NOTE_SAVE, NOTE_FORGET, SKILL_CREATE})


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
        payload = note_save_payload(draft)
        payload["expect"] = await self.notes.content_fingerprint(draft.scope, draft.topic)
        proposal = await self._create(NOTE_SAVE, conversation, requester, payload)
        verb = "Update" if existing else "Save"
        private = " (private)" if draft.private else ""
        lines = [
            f"📝 {verb} this note? (proposal #{proposal.id})",
            f"Where: {scope_label(draft.scope, conversation)}{private}",
            f"Topic: `{draft.topic}`",
            f"Summary: {draft.summary}",
        ]
        if existing is not None:
            lines.append(f"Replaces: {existing.summary}")
        if draft.body and draft.body.strip() != draft.summary:
            lines.append(quote(draft.body))
        await self._post_card(proposal, conversation, requester, "\n".join(lines), "save")
        return await self.proposals.fetch(proposal.id)

    async def propose_forget(
        self, conversation: ConversationRef, requester: UserRef, note: Note
    ) -> Proposal:
        payload = {
            "scope": str(note.scope),
            "topic": note.topic,
            "expect": await self.notes.content_fingerprint(note.scope, note.topic),
        }
        proposal = await self._create(NOTE_FORGET, conversation, requester, payload)
        text = "\n".join(
            [
                f"🗑️ Forget this note? (proposal #{proposal.id})",
                f"Where: {scope_label(note.scope, conversation)}",
                f"Topic: `{note.topic}`",
                f"Summary: {note.summary}",
            ]
        )
        await self._post_card(proposal, conversation, requester, text, "forget")
        return await self.proposals.fetch(proposal.id)

    async def propose_skill_load(
        self,
        conversation: ConversationRef,
        requester: UserRef,
        skill: Skill,
        card_lines: list[str],
        turn: SuspendedTurn,
    ) -> Proposal:
        """Ask before a model-initiated load; `turn` is the suspended turn to resume."""
        payload = {
            "name": skill.name,
            "sha256": skill.sha256,
            "path": str(skill.path),
            "turn": turn.to_json(),
        }
        proposal = await self._create(SKILL_LOAD, conversation, requester, payload)
        first = f"🧩 Load the skill `{skill.name}`? (proposal #{proposal.id})"
        text = "\n".join([first, *card_lines])
        await self._post_card(proposal, conversation, requester, text, "load it")
        return await self.proposals.fetch(proposal.id)

    async def propose_skill_create(
        self, conversation: ConversationRef, requester: UserRef, name: str, text: str
    ) -> Proposal:
        payload = {"name": name, "text": text}
        proposal = await self._create(SKILL_CREATE, conversation, requester, payload)
        where = self.skill_root / name if self.skill_root else name
        card = (
            f"🛠️ Create the skill `{name}` in {where}? (proposal #{proposal.id})\n"
            f"```\n{text.strip()}\n```"
        )
        await self._post_card(proposal, conversation, requester, card, "create it")
        return await self.proposals.fetch(proposal.id)

    async def propose(
        self,
        kind: str,
        conversation: ConversationRef,
        requester: UserRef,
        payload: Mapping[str, Any],
        card: str,
        verb: str,
    ) -> Proposal:
        """Any proposal: stored, then its card posted with the ✅/❌ reactions; the card's
        first line gets the proposal id."""
        await still_held()  # the card goes out just after: the claim was just extended
        proposal = await self._create(kind, conversation, requester, payload)
        first, _, rest = card.partition("\n")
        card = f"{first} (proposal #{proposal.id})" + (f"\n{rest}" if rest else "")
        await self._post_card(proposal, conversation, requester, card, verb)
        return await self.proposals.fetch(proposal.id)

    async def _create(
        self,
        kind: str,
        conversation: ConversationRef,
        requester: UserRef,
        payload: Mapping[str, object],
    ) -> Proposal:
        return await self.proposals.create(
            kind,
            requester=user_scope(requester),
            platform=conversation.platform,
            conversation=dataclasses.asdict(conversation),
            payload=payload,
            ttl=self.ttl,
        )

    async def _post_card(
        self,
        proposal: Proposal,
        conversation: ConversationRef,
        requester: UserRef,
        text: str,
        verb: str,
    ) -> None:
        hours = self.ttl.total_seconds() / 3600
        who = requester.name or requester.id
        footer = (
            f"React {APPROVE} to {verb} or {REJECT} to discard. Only {who} or an admin "
            f"can decide; this expires in {hours:g} h."
        )
        adapter = self.adapters[conversation.platform]
        try:
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

    # --- deciding -------------------------------------------------------------------

    def may_decide(self, proposal: Proposal, user_scope: str) -> bool:
        """The requester or an admin; only an admin where the action's server says so."""
        if user_scope in self.admins:
            return True
        return user_scope == proposal.requester and proposal.payload.get("approvers") != "admins"

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
                event.emoji, proposal.id, user_scope(event.user), proposal.requester,
            )  # fmt: skip
            return None
        if event.emoji == ALWAYS:
            return await self._approve_always(proposal, event)
        return await self.decide(
            proposal.id, approve=event.emoji == APPROVE, by=user_scope(event.user)
        )

    async def _approve_always(self, proposal: Proposal, event: ReactionEvent) -> Proposal | None:
        who = user_scope(event.user)
        conversation = conversation_of(proposal)
        if proposal.kind != ACTION or who not in self.admins or conversation.is_dm:
            _log.info("ignored ♾️ on proposal %d by %s: only admins, on actions", proposal.id, who)
            return None
        decided = await self.decide(proposal.id, approve=True, by=who)
        if "sha256" in proposal.payload:
            return decided  # a skill script: every run asks, whatever an admin allowed
        tool = f"{proposal.payload['server']}__{proposal.payload['tool']}"
        server_id = str(proposal.payload.get("server_id", ""))
        allowance = await self.actions.allow(channel_scope(conversation), tool, who, server_id)
        _log.info("%s allowed %s in %s (allowance %d)", who, tool, channel_scope(conversation),
                  allowance.id)  # fmt: skip
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
        if proposal.kind == SKILL_CREATE and proposal.status == "approved":
            proposal = await self._write_skill(proposal)
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
            proposal.kind in MEMORY_WRITES
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
        if self.events is None or proposal.kind == ACTION:
            return  # an action is captured when it has run
        conversation = conversation_of(proposal)
        arguments = {k: v for k, v in proposal.payload.items() if k not in ("turn", "text")}
        await self.events.capture(
            proposal.kind,
            arguments,
            outcome=proposal.outcome or "approved",
            conversation=proposal.conversation,
            channel_scope=None if conversation.is_dm else channel_scope(conversation),
            person=proposal.requester,
        )

    async def _write_skill(self, proposal: Proposal) -> Proposal:
        """Carry out an approved skill creation; a failure is recorded on the proposal."""
        if self.skill_root is None:
            return await self.proposals.mark(proposal.id, "no skill folder is set", failed=True)
        try:
            path = write_skill(self.skill_root, proposal.payload["name"], proposal.payload["text"])
        except (SkillError, OSError) as exc:
            return await self.proposals.mark(proposal.id, f"not written: {exc}", failed=True)
        return await self.proposals.mark(proposal.id, f"written to {path}")

    async def expire(self) -> int:
        """Mark overdue proposals expired and say so on their cards."""
        expired = await self.proposals.expire_due()
        for proposal in expired:
            await self.closings.finish(proposal, self.follow_up)
        return len(expired)

    async def update_card(self, proposal: Proposal) -> None:
        adapter = self.adapters.get(proposal.platform)
        if adapter is None or proposal.card_message_id is None:
            return
        text = await self.outcome_text(proposal)
        posted = PostedMessage(conversation_of(proposal), proposal.card_message_id)
        try:
            await adapter.edit(posted, text)
        except Exception:
            _log.exception("could not edit the card of proposal %d", proposal.id)

    async def outcome_text(self, proposal: Proposal) -> str:
        """The card's final text, from the database rows, not from the model."""
        return await outcome_text(proposal, self.notes, self.actions)
