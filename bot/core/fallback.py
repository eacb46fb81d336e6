"""What a turn answers when the model cannot: down, unreadable, a prompt too long for it, or
an answer with nothing in it (a small model's way of failing). The person gets what recall
found, after a short notice that says why, and an operator sees each in the metrics."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot import metrics
from bot.core.turn_state import Turn
from bot.model.client import ChatResult, ModelUnavailable
from memory import SearchHit

_log = logging.getLogger(__name__)

OFFLINE_NOTICE = "⚠️ My model is unreachable right now, so I can only share what I remember."
# The model answered, but with nothing lorebot could read: it is not down.
UNREADABLE_NOTICE = "⚠️ My model's answer could not be read, so I can only share what I remember."
TOO_LONG_NOTICE = (
    "⚠️ This conversation is longer than my model can read at once, so I can only share "
    "what I remember."
)
EMPTY_NOTICE = "⚠️ My model gave no answer, so I can only share what I remember."
# Sent once after an empty answer; the history keeps neither it nor the empty answer.
EMPTY_NUDGE = (
    "Your last answer was empty. Answer the message above in words, or call one of the "
    "tools if you need one."
)


def ask_again(conversation: str, turn: Turn, result: ChatResult) -> None:
    """After an answer with nothing in it (no words, no call; thinking alone counts as
    nothing), tell the model so, once per turn; the second raises `ModelUnavailable` of
    kind "empty", which the turn answers from memory."""
    if turn.nudged:
        metrics.MODEL_SLIPS.labels("empty twice").inc()
        _log.info("model answered empty again in %s; answering from memory", conversation)
        raise ModelUnavailable("the model gave an empty answer twice", kind="empty")
    turn.nudged = True
    metrics.MODEL_SLIPS.labels("empty").inc()
    _log.info("model answered empty in %s; asking once more", conversation)
    turn.messages.append({"role": "assistant", "content": result.content})
    turn.messages.append({"role": "user", "content": EMPTY_NUDGE})


def notice_for(exc: ModelUnavailable) -> str:
    """The notice before an answer from memory, by why the model could not give one."""
    return {
        "too_long": TOO_LONG_NOTICE,
        "unreadable": UNREADABLE_NOTICE,
        "empty": EMPTY_NOTICE,
    }.get(exc.kind, OFFLINE_NOTICE)


def offline_answer(hits: Sequence[SearchHit], notice: str = OFFLINE_NOTICE) -> str:
    """The answer without the model: what recall found, after `notice` says why."""
    if not hits:
        return f"{notice} I found nothing in my notes about that."
    lines = [f"• `{h.note.topic}`: {h.note.summary}" for h in hits]
    return f"{notice} These notes may help:\n" + "\n".join(lines)
