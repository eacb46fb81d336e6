"""Handling one event the inbox gave this replica: a message goes to the router, a
reaction to the approval service; a failure is logged and answered, never raised."""

from __future__ import annotations

import logging

from adapters.base import (
    ButtonClick,
    DeliveryError,
    Event,
    Message,
    ReactionEvent,
    SlashCommand,
    UserRef,
)
from bot.approvals.service import ApprovalService
from bot.context.scopes import user_scope
from bot.core.decisions import Decisions
from bot.core.replies import APOLOGY, STORAGE_FAILED_REPLY, not_posted
from bot.core.router import Router
from bot.errors import user_message
from bot.fencing import ClaimLost
from memory import Conflict, InvalidInput
from memory.errors import StoreError
from memory.stores.proposals import Proposal

_log = logging.getLogger(__name__)


def _person(event: Event) -> UserRef:
    return event.author if isinstance(event, Message) else event.user


class Handler:
    """Handles events and answers the people they came from."""

    def __init__(self, router: Router, approvals: ApprovalService, decisions: Decisions) -> None:
        self.router = router
        self.approvals = approvals
        self.decisions = decisions

    async def handle(self, event: Message | ReactionEvent) -> None:
        """Handle one event; a failure is logged and answered, never raised."""
        user = _person(event)
        outcome = "handled"
        decided = None
        try:
            if isinstance(event, ReactionEvent):
                decided = await self.approvals.on_reaction(event)
                outcome = f"proposal {decided.id} {decided.status}" if decided else "ignored"
                if decided is not None:
                    await self.router.after_decision(decided)
            else:
                await self.router.handle(event)
        except Conflict as exc:
            outcome = f"closed proposal ({exc})"
        except ClaimLost as exc:  # its new holder answers; a word here would come twice
            _log.warning("stopped handling event %s: %s", event.event_id, exc)
            outcome = "taken over"
        except DeliveryError as exc:
            outcome = "not delivered"  # the adapter logged what to fix; an apology would fail too
            if isinstance(event, SlashCommand):  # but a command's answer reaches the person
                await self.say(event, not_posted(event, exc))
        except InvalidInput as exc:
            outcome = "user error"
            await self.say(event, f"⚠️ {exc}")
        except StoreError as exc:  # the driver's words are for the operator's log
            _log.error("could not handle event %s, the store failed: %s", event.event_id, exc)
            outcome = "storage failed"
            await self.say(event, STORAGE_FAILED_REPLY)
        except Exception as exc:
            message = user_message(exc)
            outcome = "user error" if message else "failed"
            if message is None:
                _log.exception("failed to handle event %s", event.event_id)
            await self.say(event, f"⚠️ {message}" if message else APOLOGY)
        if isinstance(event, ReactionEvent) and outcome != "taken over":
            await self._tell_decided(event, decided)
        _log.info(
            "%s conversation=%s person=%s outcome=%s",
            "reaction" if isinstance(event, ReactionEvent) else "message",
            event.conversation.key,
            user_scope(user),
            outcome,
        )

    async def _tell_decided(self, event: ReactionEvent, decided: Proposal | None) -> None:
        """Answer the person whose click or typed decision this reaction was."""
        try:
            key = f"{event.conversation.platform}:{event.event_id}"
            await self.decisions.handled(key, event, decided)
        except Exception:
            _log.exception("could not answer the decision %s", event.event_id)

    async def answer_turned_away(self, event: Event, text: str) -> None:
        """A slash command or a click turned away still gets its answer."""
        if isinstance(event, SlashCommand | ButtonClick) and not _person(event).is_bot:
            await self.say(event, text)

    async def say(self, event: Event, text: str) -> None:
        try:
            if isinstance(event, SlashCommand | ButtonClick):  # they alone hear
                await event.answer(text)
                return
            await self.router.reply(event.conversation, text)
        except DeliveryError:
            pass
        except Exception:
            _log.exception("could not reply in %s", event.conversation.key)
