"""How a small model slips within a turn, and what lorebot does about each slip: an empty
answer is asked again once; an action announced but not called is nudged once; the same
call again gets its earlier result instead of a second run; a mistake with the tools (a
tool that does not exist, arguments that fail validation) is told once, and the same
mistake again, too many of them, or no answer within the round limit end the turn with
what it found so far. Each slip is counted: a metric by kind, an INFO line with the
conversation, and a row that `lorebot doctor` sums for the last day."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from bot import metrics
from bot.context.suspended import Outcome
from bot.core.turn_state import Repeated, Turn, tool_results
from bot.model.client import ChatResult, ModelUnavailable
from bot.split import clip_reply
from bot.tools.base import ToolError
from memory import StoreError
from memory.policy.redaction import mask_known
from memory.stores.slips import ModelSlips

_log = logging.getLogger(__name__)

# The kinds counted, as the metric's label and doctor's lines name them.
EMPTY, EMPTY_TWICE, INTENT = "empty", "empty twice", "intent"
REPEATED, MISTAKE, GAVE_UP = "repeated call", "tool mistake", "gave up"
UNREADABLE = "unreadable"  # an answer the client could not read, answered from memory
KINDS = (EMPTY, EMPTY_TWICE, INTENT, REPEATED, MISTAKE, GAVE_UP, UNREADABLE)

# Sent once after an empty answer; the history keeps neither it nor the empty answer.
EMPTY_NUDGE = (
    "Your last answer was empty. Answer the message above in words, or call one of the "
    "tools if you need one."
)
INTENT_NUDGE = (
    'You said "{intent}" but called no tool. Call the tool now, or answer the message in words.'
)
REPEATED_NOTE = (
    "You already called {name} with these arguments in this turn, so it was not run "
    "again. Its result was:\n{result}\nDo not call it again: answer with what you have."
)
GAVE_UP_NOTICE = "⚠️ I could not finish this answer: {reason}."
RESULT_CHARS = 300  # of each tool result in an answer that gave up

# "Let me search my notes.", "Sure! I'll check the status now…": the answer's last sentence
# says the model is about to act (a verb of doing) and nothing follows it ("Let me check:
# it is up." reports what it found).
_INTENT = re.compile(
    r"(?:^|[.!?…]\s+|\n)\s*(?:(?:ok(?:ay)?|sure|alright|now|first|great|right)[,!.]?\s+)*"
    r"((?:i'll|i will|i'm going to|i am going to|let me|i need to|i'm about to|i shall)\s+"
    r"(?:now\s+|first\s+|quickly\s+|just\s+|go ahead and\s+)?"
    r"(?:check|search|look|run|call|use|write|create|find|fetch|query|open|get|see|save|"
    r"propose|load|try|pull|read|restart|deploy|list|inspect|verify|execute|start|stop|"
    r"ping|test|scan|grab|dig|make|add|update|delete|remove)\b[^.!?…:\n]*)"
    r"[.!?…:]*\s*$",
    re.IGNORECASE,
)


class GiveUp(Exception):
    """The turn ends without the model's answer, with what its tools found so far."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def announced_intent(content: str) -> str | None:
    """The action an answer announces at its end without doing it ("I'll check the status
    now"), or None."""
    found = _INTENT.search(content.replace("’", "'").strip())
    if found is None:
        return None
    intent = found.group(1).strip()
    return intent if len(intent) <= 120 else intent[:120] + "…"


class Slips:
    """Counts slips and tells the model what went wrong; `store` keeps them for doctor."""

    def __init__(self, store: ModelSlips | None = None, *, max_mistakes: int = 3) -> None:
        self.store = store
        self.max_mistakes = max_mistakes

    async def count(self, kind: str, conversation: str, detail: str) -> None:
        metrics.MODEL_SLIPS.labels(kind).inc()
        _log.info("model slip (%s) in %s: %s", kind, conversation, detail)
        if self.store is None:
            return
        try:
            await self.store.record(kind, conversation)
        except StoreError as exc:  # a count is never worth failing the person's turn
            _log.warning("could not record a model slip: %s", exc)

    async def ask_again(self, conversation: str, turn: Turn, result: ChatResult) -> None:
        """After an answer with nothing in it (no words, no call; thinking alone counts as
        nothing), tell the model so, once per turn; the second raises `ModelUnavailable`
        of kind "empty", which the turn answers from memory."""
        if turn.nudged:
            await self.count(EMPTY_TWICE, conversation, "empty again; answering from memory")
            raise ModelUnavailable("the model gave an empty answer twice", kind="empty")
        turn.nudged = True
        await self.count(EMPTY, conversation, "empty answer; asking once more")
        turn.messages.append({"role": "assistant", "content": result.content})
        turn.messages.append({"role": "user", "content": EMPTY_NUDGE})

    async def nudge_intent(self, conversation: str, turn: Turn, result: ChatResult) -> bool:
        """An answer that announces a call it did not make, while tools were offered: tell
        the model once per turn (True), and take what it answers next."""
        intent = announced_intent(result.content)
        if intent is None or turn.intent_nudged or not turn.tools:
            return False
        turn.intent_nudged = True
        await self.count(INTENT, conversation, f"announced {intent!r} without a call")
        turn.messages.append({"role": "assistant", "content": result.content})
        turn.messages.append({"role": "user", "content": INTENT_NUDGE.format(intent=intent)})
        return True

    async def repeated(self, conversation: str, turn: Turn, name: str, raw: Any) -> Repeated | None:
        """The note for a call made before in this turn with the same arguments (its earlier
        result included), or None for a new call."""
        earlier = turn.earlier_result(name, raw)
        if earlier is None:
            return None
        await self.count(REPEATED, conversation, f"{name} again with the same arguments")
        return Repeated(REPEATED_NOTE.format(name=name, result=earlier))

    async def mistake(self, conversation: str, turn: Turn, error: ToolError) -> ToolError:
        """A mistake with the tools, told to the model the first time; the same mistake
        again, or more than `max_mistakes` of them, ends the turn (`GiveUp`)."""
        told = error.text
        await self.count(MISTAKE, conversation, told)
        if told in turn.mistakes:
            raise GiveUp(f"my model made the same mistake with its tools again ({told})")
        turn.mistakes.append(told)
        if len(turn.mistakes) > self.max_mistakes:
            raise GiveUp(f"my model made {len(turn.mistakes)} mistakes with its tools")
        return error

    async def gave_up(
        self, conversation: str, turn: Turn, stop: GiveUp, secrets: Sequence[str], limit: int
    ) -> str:
        """The answer of a turn that ended without the model's: why, plainly, and what its
        tools found so far."""
        await self.count(GAVE_UP, conversation, stop.reason)
        lines = [
            f"• {name}: {clip_reply(' '.join(text.split()), RESULT_CHARS)}"
            for name, text, outcome in tool_results(turn)
            if outcome is Outcome.OK
        ]
        notice = GAVE_UP_NOTICE.format(reason=stop.reason)
        if lines:
            answer = f"{notice} What I found so far:\n" + "\n".join(lines)
        else:
            answer = f"{notice} I found nothing to show yet."
        return clip_reply(mask_known(answer, secrets), limit)
