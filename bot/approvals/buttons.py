"""A card's buttons: what each carries, and whether a click on one may decide its card.

A button's value names the proposal and a hash of what the card was built from (the
proposal's id, kind and payload), so a click on a card that no longer shows what would be
decided, or on a value someone made up, decides nothing. The value is not a secret and
grants nothing: who may decide is checked as for a reaction.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from adapters.base import ALWAYS, APPROVE, REJECT, Button
from memory.stores.proposals import Proposal

# Slack allows 2,000 characters in a button's value, Discord 100 in a custom_id.
MAX_VALUE_CHARS = 100
HASH_CHARS = 16
PREFIX = "lorebot"

_CHOICES = {"approve": APPROVE, "decline": REJECT, "always": ALWAYS}
_VALUE = re.compile(rf"{PREFIX}:(approve|decline|always):([1-9][0-9]{{0,17}}):([0-9a-f]{{16}})")

APPROVE_LABEL = "Approve"
DECLINE_LABEL = "Decline"
ALWAYS_LABEL = "Always allow"


@dataclass(frozen=True, slots=True)
class Choice:
    """What a button asks: `emoji` (the reaction that asks the same) on proposal
    `proposal_id`, whose card was built with hash `card_hash`."""

    emoji: str
    proposal_id: int
    card_hash: str


def card_hash(proposal: Proposal) -> str:
    """A hash of what the card shows and a decision applies: the proposal's id, kind and
    payload (the waiting turn included), so any change to them changes it."""
    canonical = json.dumps(
        [proposal.id, proposal.kind, proposal.payload], sort_keys=True, ensure_ascii=True
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_CHARS]


def card_buttons(proposal: Proposal, *, always: bool) -> list[Button]:
    """Approve and Decline, and Always allow where an admin's ♾️ would apply."""
    made = card_hash(proposal)

    def value(choice: str) -> str:
        return f"{PREFIX}:{choice}:{proposal.id}:{made}"

    buttons = [
        Button(APPROVE_LABEL, value("approve"), "primary"),
        Button(DECLINE_LABEL, value("decline"), "danger"),
    ]
    if always:
        buttons.append(Button(ALWAYS_LABEL, value("always")))
    return buttons


def read_value(value: str) -> Choice | None:
    """The choice a button's value asks, or None for a value no lorebot card carries."""
    if len(value) > MAX_VALUE_CHARS:
        return None
    match = _VALUE.fullmatch(value)
    if match is None:
        return None
    choice, number, made = match.groups()
    return Choice(_CHOICES[choice], int(number), made)
