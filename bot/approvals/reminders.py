"""Waiting cards reach their approvers: a card nobody decided within
`bot.card_reminder_minutes` is sent once, by DM with its buttons, to each person who may
decide it. The leading replica sends them; the database makes each card's reminder go
out once across replicas.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from adapters.base import Adapter, DeliveryError, OpensDirect, ShowsButtons
from bot.approvals.buttons import card_buttons
from bot.approvals.cards import conversation_of
from bot.approvals.clicks import may_decide
from bot.approvals.kinds.registry import get_kind
from bot.tasks import stop_if_asked
from memory.errors import StoreError
from memory.scope_ids import raw_id
from memory.stores.proposals import Proposal, ProposalStore

_log = logging.getLogger(__name__)

INTERVAL_S = 60.0  # how often waiting cards are looked for


def approvers(proposal: Proposal, admins: frozenset[str]) -> list[str]:
    """The people (user scopes) a waiting card is sent to: the requester where they may
    decide it, and the platform's admins for an action, a team note, or a card only admins
    decide."""
    kind = get_kind(proposal.kind)
    scope = str(proposal.payload.get("scope", ""))
    people = [proposal.requester] if may_decide(proposal, proposal.requester, admins) else []
    if (
        kind.always_approvable()
        or scope.startswith("team:")
        or proposal.payload.get("approvers") == "admins"
    ):
        people += sorted(a for a in admins if a.startswith(f"user:{proposal.platform}/"))
    return list(dict.fromkeys(people))


def reminder_text(proposal: Proposal) -> str:
    kind = get_kind(proposal.kind)
    subject = kind.subject(proposal.payload)
    where = conversation_of(proposal)
    place = "a direct message" if where.is_dm else f"channel {where.channel_id}"
    return (
        f"⏰ Card #{proposal.id} is waiting for your decision: {kind.label} `{subject}`, "
        f"asked by {proposal.requester} in {place}. It expires at "
        f"{proposal.expires_at:%Y-%m-%d %H:%M} UTC; the card itself takes ✅ or ❌ too."
    )


def reminder_outcome(proposal: Proposal) -> str:
    """What a reminder says once its card is decided: what became of the card, by whom and
    when. Not the card's own text, whose "this channel" and "say undo" hold only there."""
    kind = get_kind(proposal.kind)
    card = f"Card #{proposal.id} ({kind.label} `{kind.subject(proposal.payload)}`)"
    when = f" at {proposal.decided_at:%Y-%m-%d %H:%M} UTC" if proposal.decided_at else ""
    by = f" by {proposal.decided_by}" if proposal.decided_by else ""
    if proposal.status == "approved":
        return f"✅ {card} was approved{by}{when}; its card says what was done."
    if proposal.status == "rejected":
        return f"❌ {card} was declined{by}{when}."
    if proposal.status == "expired":
        return f"⌛ {card} expired{when}: nobody decided it in time."
    return f"⚠️ {card} was not applied{when}: {proposal.outcome}"


class Reminders:
    """Sends the reminders of cards that waited too long."""

    def __init__(
        self,
        proposals: ProposalStore,
        adapters: Mapping[str, Adapter],
        *,
        admins: frozenset[str],
        after: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self.proposals = proposals
        self.adapters = adapters
        self.admins = admins
        self.after = after
        self.clock = clock

    async def remind_due(self) -> int:
        """Send the reminders now due; how many cards were reminded of."""
        if self.after <= timedelta(0):
            return 0
        due = await self.proposals.fetch_to_remind(self.clock() - self.after, list(self.adapters))
        reminded = 0
        for proposal in due:
            if not await self.proposals.claim_reminder(proposal.id):
                continue  # another replica sends it
            reminded += 1
            for person in approvers(proposal, self.admins):
                try:
                    await self._send(proposal, person)
                except Exception:  # one person's failure keeps no one else from theirs
                    _log.exception("could not remind %s of card #%d", person, proposal.id)
        return reminded

    async def _send(self, proposal: Proposal, person: str) -> None:
        adapter = self.adapters[proposal.platform]
        if not isinstance(adapter, OpensDirect):
            return  # a platform without DMs (the console) shows its open cards itself
        user_id = raw_id(person.partition("/")[2])
        try:
            dm = await adapter.direct_conversation(user_id)
            text = reminder_text(proposal)
            if isinstance(adapter, ShowsButtons) and adapter.shows_buttons:
                buttons = card_buttons(proposal, always=False)
                posted = await adapter.send_card(dm, text, buttons)
            else:
                posted = await adapter.send(dm, text)
        except DeliveryError as exc:
            _log.warning("could not remind %s of card #%d: %s", person, proposal.id, exc)
            return
        where = posted.conversation.channel_id
        await self.proposals.record_reminder(proposal.id, where, posted.message_id)
        _log.info("reminded %s of card #%d", person, proposal.id)
        now = await self.proposals.fetch(proposal.id)
        if now.followed_up:  # decided and finished while this reminder went out
            await adapter.edit(posted, reminder_outcome(now))

    async def forever(self) -> None:
        """Send due reminders every `INTERVAL_S` until cancelled."""
        while True:
            try:
                await self.remind_due()
            except StoreError as exc:  # the next round tries again
                _log.warning("could not look for waiting cards: %s", exc)
            except Exception:  # as the follow-ups: the loop outlives one round's failure
                _log.exception("could not send the reminders of waiting cards")
            stop_if_asked()
            await asyncio.sleep(INTERVAL_S)
