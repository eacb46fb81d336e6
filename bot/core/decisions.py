"""Clicks on a card's buttons and typed decisions (`/lorebot approve 12`), for the
dispatcher.

Each is checked as it arrives and a refusal is answered to the person alone; one that may
decide becomes the reaction that asks the same and waits in the inbox like one, so it is
decided by the reaction's rules, once across replicas, in its conversation's order. The
person's answer waits here until it is handled: a click on the card is answered only when
it decided nothing (the edited card answers it otherwise); a typed decision, or a click on
a reminder in a DM, always.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from adapters.base import (
    Adapter,
    Answer,
    AnswersPrivately,
    ButtonClick,
    ConversationRef,
    ReactionEvent,
    SlashCommand,
)
from bot.approvals.clicks import WEB_CONSOLE, DecisionCheck, Refusal, closed_line
from memory.stores.proposals import Proposal, ProposalStore

_TYPED = re.compile(r"(approve|decline|reject)\s+#?([1-9][0-9]{0,17})", re.IGNORECASE)
# Answers kept for decisions another replica may have handled: the oldest go first.
MAX_WAITING_ANSWERS = 1000


@dataclass(frozen=True, slots=True)
class Waiting:
    """The answer of a decision waiting in the inbox; `told` ones hear the outcome (a typed
    decision, a click on a reminder: the card they would see change is elsewhere)."""

    answer: Answer
    told: bool


def outcome_line(proposal: Proposal) -> str:
    """What a person who decided a card is told of it."""
    if proposal.status == "approved":
        return f"Card #{proposal.id} is approved."
    if proposal.status == "rejected":
        return f"Card #{proposal.id} is declined."
    return f"Card #{proposal.id} was not applied: {proposal.outcome}"


def typed_decision(text: str) -> tuple[int, bool] | None:
    """The card number and whether to approve it, for `approve 12` / `decline 12`."""
    match = _TYPED.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(2)), match.group(1).lower() == "approve"


class Decisions:
    """Turns clicks and typed decisions into reactions, and answers them once handled."""

    def __init__(
        self, proposals: ProposalStore, admins: frozenset[str], adapters: Mapping[str, Adapter]
    ) -> None:
        self.proposals = proposals
        self.adapters = adapters
        self.check = DecisionCheck(proposals, admins)
        self._waiting: OrderedDict[str, Waiting] = OrderedDict()

    async def reaction_for(self, event: ButtonClick | SlashCommand) -> ReactionEvent | Refusal:
        """The reaction `event` asks for, or why it decides nothing."""
        if isinstance(event, ButtonClick):
            return await self.check.click(event)
        typed = typed_decision(event.text)
        assert typed is not None, "only typed decisions come here"
        number, approve = typed
        where = event.conversation.channel_id
        return await self.check.typed(number, approve, event.author, event.event_id, where)

    def wait(self, key: str, event: ButtonClick | SlashCommand, card: ReactionEvent) -> None:
        """Keep `event`'s answer until `card`, the reaction it asks for, stored under `key`,
        is handled."""
        elsewhere = event.conversation.channel_id != card.conversation.channel_id
        self.wait_answer(key, event.answer, told=isinstance(event, SlashCommand) or elsewhere)

    def wait_answer(self, key: str, answer: Answer, *, told: bool = True) -> None:
        """Keep `answer` until the decision stored under `key` is handled."""
        self._waiting[key] = Waiting(answer, told)
        while len(self._waiting) > MAX_WAITING_ANSWERS:
            self._waiting.popitem(last=False)

    def forget(self, key: str) -> None:
        self._waiting.pop(key, None)

    async def handled(self, key: str, event: ReactionEvent, decided: Proposal | None) -> None:
        """Answer the person whose click or typed decision `key` was, now that it was
        handled: `decided` is the proposal it decided, None when it decided nothing. When
        another replica took it, its answer is not here: a refusal then goes to the person
        alone where the platform can say so outside the interaction (Slack)."""
        waiting = self._waiting.pop(key, None)
        if waiting is None and event.asked_in in (None, WEB_CONSOLE):
            return  # a reaction; or a console's decision, whose page reads the card again
        if decided is not None:
            if waiting is not None and waiting.told:
                await waiting.answer(outcome_line(decided))
            return
        conv = event.conversation
        proposal = await self.proposals.fetch_by_card(
            conv.platform, conv.channel_id, event.target_message_id
        )
        if proposal is not None and not proposal.pending:
            text = closed_line(proposal)
        else:
            text = "That decided nothing: the card may have changed meanwhile."
        if waiting is not None:
            await waiting.answer(text)
            return
        adapter = self.adapters.get(conv.platform)
        if isinstance(adapter, AnswersPrivately):
            where = ConversationRef(conv.platform, event.asked_in or conv.channel_id)
            await adapter.answer_privately(where, event.user.id, text)
