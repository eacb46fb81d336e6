"""What a turn answers when the model cannot: down, unreadable, a prompt too long for it, or
an answer with nothing in it twice (a small model's way of failing, see `bot.core.slips`).
The person gets what recall found, after a short notice that says why."""

from __future__ import annotations

from collections.abc import Sequence

from bot.model.client import ModelUnavailable
from memory import SearchHit

OFFLINE_NOTICE = "⚠️ My model is unreachable right now, so I can only share what I remember."
# The model answered, but with nothing lorebot could read: it is not down.
UNREADABLE_NOTICE = "⚠️ My model's answer could not be read, so I can only share what I remember."
TOO_LONG_NOTICE = (
    "⚠️ This conversation is longer than my model can read at once, so I can only share "
    "what I remember."
)
EMPTY_NOTICE = "⚠️ My model gave no answer, so I can only share what I remember."


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
