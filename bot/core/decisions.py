"""Clicks on a card's buttons and typed decisions (`/lorebot approve 12`), for the
dispatcher.

Each is checked as it arrives and a refusal is answered to the person alone; one that may
decide becomes the reaction that asks the same and waits in the inbox like one, so it is
decided by the reaction's rules, once across replicas, in its conversation's order. The
person's answer waits here until it is handled: a click is answered only when it decided
nothing (the edited card answers it otherwise), a typed decision always.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from adapters.base import Answer, ButtonClick, ReactionEvent, SlashCommand
from bot.approvals.clicks import DecisionCheck, Refusal, closed_line
from memory.stores.proposals import Proposal, ProposalStore

_TYPED = re.compile(r"(approve|decline|reject)\s+#?([1-9][0-9]{0,17})", re.IGNORECASE)
# Answers kept for decisions another replica may have handled: the oldest go first.
MAX_WAITING_ANSWERS = 1000


@dataclass(frozen=True, slots=True)
class Waiting:
    """The answer of a decision waiting in the inbox; `typed` ones are told the outcome."""

    answer: Answer
    typed: bool


def typed_decision(text: str) -> tuple[int, bool] | None:
    """The card number and whether to approve it, for `approve 12` / `decline 12`."""
    match = _TYPED.fullmatch(text.strip())
    if match is None:
        return None
    return int(match.group(2)), match.group(1).lower() == "approve"


class Decisions:
    """Turns clicks and typed decisions into reactions, and answers them once handled."""

    def __init__(self, proposals: ProposalStore, admins: frozenset[str]) -> None:
        self.proposals = proposals
        self.check = DecisionCheck(proposals, admins)
        self._waiting: OrderedDict[str, Waiting] = OrderedDict()

    async def reaction_for(self, event: ButtonClick | SlashCommand) -> ReactionEvent | Refusal:
        """The reaction `event` asks for, or why it decides nothing."""
        if isinstance(event, ButtonClick):
            return await self.check.click(event)
        typed = typed_decision(event.text)
        assert typed is not None, "only typed decisions come here"
        number, approve = typed
        return await self.check.typed(number, approve, event.author, event.event_id)

    def wait(self, key: str, event: ButtonClick | SlashCommand) -> None:
        """Keep `event`'s answer until the reaction stored under `key` is handled."""
        self._waiting[key] = Waiting(event.answer, isinstance(event, SlashCommand))
        while len(self._waiting) > MAX_WAITING_ANSWERS:
            self._waiting.popitem(last=False)

    def forget(self, key: str) -> None:
        self._waiting.pop(key, None)

    async def handled(self, key: str, event: ReactionEvent, decided: Proposal | None) -> None:
        """Answer the person whose click or typed decision `key` was, now that it was
        handled: `decided` is the proposal it decided, None when it decided nothing."""
        waiting = self._waiting.pop(key, None)
        if waiting is None:
            return  # a reaction, or answered by the replica that took it
        if decided is not None:
            if waiting.typed:
                await waiting.answer(f"Card #{decided.id} is {decided.status} now.")
            return
        conv = event.conversation
        proposal = await self.proposals.fetch_by_card(
            conv.platform, conv.channel_id, event.target_message_id
        )
        if proposal is not None and not proposal.pending:
            await waiting.answer(closed_line(proposal))
        else:
            await waiting.answer("That decided nothing: the card may have changed meanwhile.")
