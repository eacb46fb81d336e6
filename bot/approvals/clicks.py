"""Whether a click on a card's button, or a typed `approve 12`, may decide its card.

Both are checked as they arrive, so that a refusal is answered to the person at once;
one that passes becomes the reaction that asks the same, which the approval service
decides by a reaction's rules, in the conversation's order (`bot.core.decisions`). What
the check refuses here would be refused there too: it only says why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from adapters.base import ALWAYS, APPROVE, REJECT, ButtonClick, ReactionEvent, UserRef
from bot import metrics
from bot.approvals.buttons import card_hash, read_value
from bot.approvals.cards import conversation_of
from bot.approvals.kinds.registry import get_kind
from bot.context.scopes import user_scope
from memory import NotFound
from memory.stores.proposals import Proposal, ProposalStore

_log = logging.getLogger(__name__)

NOT_A_CARD = "That button is not on any card of mine, so nothing was decided."
OTHER_CARD = "That button does not belong to this card, so nothing was decided."
CHANGED = "This card changed since it was posted, so nothing was decided."
NO_CARD = "There is no card #{id} you can decide."
NOT_POSTED = "Card #{id} was never posted, so it cannot be decided."
ONLY_ADMINS_ALWAYS = "Only an admin can always allow a tool, and only in a channel."
# Where a decision made in the web console was asked (`ReactionEvent.asked_in`): no
# platform's channel id has a space.
WEB_CONSOLE = "web console"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a click or a typed decision decides nothing: `reason` for the metrics and the
    log, `text` for the person alone."""

    reason: str
    text: str


def closed_line(proposal: Proposal) -> str:
    """What a person is told who tries to decide a card already decided."""
    when = f" at {proposal.decided_at:%Y-%m-%d %H:%M} UTC" if proposal.decided_at else ""
    by = proposal.decided_by or "lorebot"
    if proposal.status == "approved":
        return f"Card #{proposal.id} was already approved by {by}{when}."
    if proposal.status == "rejected":
        return f"Card #{proposal.id} was already declined by {by}{when}."
    if proposal.status == "expired":
        expired = f"{proposal.expires_at:%Y-%m-%d %H:%M} UTC"
        return f"Card #{proposal.id} expired at {expired}: nobody decided it in time."
    return f"Card #{proposal.id} was already closed{when}: {proposal.outcome}"


def who_decides(proposal: Proposal) -> str:
    """Who may decide a card, as a refusal says it."""
    if proposal.payload.get("approvers") == "admins":
        return f"Only an admin can decide card #{proposal.id}."
    return (
        f"Only the person who asked ({proposal.requester}) or an admin can decide "
        f"card #{proposal.id}."
    )


def may_decide(proposal: Proposal, person: str, admins: frozenset[str]) -> bool:
    """The requester or an admin; only an admin where the action's server says so."""
    if person in admins:
        return True
    return person == proposal.requester and proposal.payload.get("approvers") != "admins"


class DecisionCheck:
    """The checks, against the proposals as they are stored now."""

    def __init__(self, proposals: ProposalStore, admins: frozenset[str]) -> None:
        self.proposals = proposals
        self.admins = admins

    async def click(self, click: ButtonClick) -> ReactionEvent | Refusal:
        """The reaction a click asks for, or why it may not decide anything."""
        choice = read_value(click.value)
        if choice is None:
            return self._refused("not a card", NOT_A_CARD, click.user)
        proposal = await self._fetch(choice.proposal_id)
        if proposal is None or not await self._on_card_or_reminder(proposal, click):
            return self._refused("other card", OTHER_CARD, click.user)
        if card_hash(proposal) != choice.card_hash:
            return self._refused("card changed", CHANGED, click.user)
        where = click.conversation.channel_id
        return self._decision(proposal, choice.emoji, click.user, click.event_id, where)

    async def typed(
        self, proposal_id: int, approve: bool, user: UserRef, event_id: str, asked_in: str
    ) -> ReactionEvent | Refusal:
        """The reaction `approve 12` / `decline 12` asks for, or why it may not decide. A
        number typed anywhere is answered alike for a card that does not exist and one the
        person may not decide, so nothing about other people's cards is told."""
        proposal = await self._fetch(proposal_id)
        unknown = NO_CARD.format(id=proposal_id)
        # A person is known by their platform's id: a card on another platform is decided
        # there (or with `lorebot proposals` by an operator).
        if proposal is None or proposal.platform != user.platform:
            return self._refused("no such card", unknown, user)
        if not may_decide(proposal, user_scope(user), self.admins):
            return self._refused("not allowed", unknown, user)
        if proposal.card_message_id is None:
            return self._refused("not posted", NOT_POSTED.format(id=proposal_id), user)
        emoji = APPROVE if approve else REJECT
        return self._decision(proposal, emoji, user, event_id, asked_in)

    async def in_console(
        self, proposal_id: int, approve: bool, user: UserRef, shown_hash: str, event_id: str
    ) -> ReactionEvent | Refusal:
        """The reaction a decision in the web console asks for, or why it may not decide.
        As typed, a card the person may not decide is answered as one that does not exist;
        `shown_hash` is the card's as the page showed it. An admin decides a card of any
        platform."""
        proposal = await self._fetch(proposal_id)
        unknown = NO_CARD.format(id=proposal_id)
        if proposal is None or not may_decide(proposal, user_scope(user), self.admins):
            return self._refused("no such card", unknown, user)
        if card_hash(proposal) != shown_hash:
            return self._refused("card changed", CHANGED, user)
        if proposal.card_message_id is None:
            return self._refused("not posted", NOT_POSTED.format(id=proposal_id), user)
        emoji = APPROVE if approve else REJECT
        return self._decision(proposal, emoji, user, event_id, WEB_CONSOLE)

    def _decision(
        self, proposal: Proposal, emoji: str, user: UserRef, event_id: str, asked_in: str
    ) -> ReactionEvent | Refusal:
        person = user_scope(user)
        if not may_decide(proposal, person, self.admins):
            return self._refused("not allowed", who_decides(proposal), user)
        if not proposal.pending:
            return self._refused("decided", closed_line(proposal), user)
        conversation = conversation_of(proposal)
        if emoji == ALWAYS and (
            person not in self.admins
            or conversation.is_dm
            or not get_kind(proposal.kind).always_approvable()
        ):
            return self._refused("not an admin", ONLY_ADMINS_ALWAYS, user)
        assert proposal.card_message_id is not None  # a card someone saw was posted
        return ReactionEvent(
            conversation, user, emoji, proposal.card_message_id, event_id, asked_in=asked_in
        )

    async def _on_card_or_reminder(self, proposal: Proposal, click: ButtonClick) -> bool:
        """Whether the click was on the proposal's card, or on a DM that reminded someone
        of it."""
        where = click.conversation
        if proposal.platform != where.platform:
            return False
        on_card = (
            proposal.conversation.get("channel_id") == where.channel_id
            and proposal.card_message_id == click.message_id
        )
        if on_card or not where.is_dm:
            return on_card
        reminders = await self.proposals.fetch_reminders(proposal.id)
        return (where.channel_id, click.message_id) in reminders

    async def _fetch(self, proposal_id: int) -> Proposal | None:
        try:
            return await self.proposals.fetch(proposal_id)
        except NotFound:
            return None

    def _refused(self, reason: str, text: str, user: UserRef) -> Refusal:
        metrics.DECISIONS_REFUSED.labels(reason).inc()
        _log.info("refused a decision by %s: %s", user_scope(user), reason)
        return Refusal(reason, text)
