"""A turn in flight: its messages, the calls of its round and how each call it answered
ended, what a suspended turn keeps in its proposal (no secret: those wait in memory), and
how the round's calls are counted from the messages, so the limits hold across a turn
resumed after a card."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bot.actions.held import LOST, HeldArguments
from bot.context.suspended import BrokenCall, Outcome, PendingCall, SuspendedTurn
from bot.context.turn import TurnContext
from bot.model.client import ToolCall
from bot.tools.base import Ok, Tool, ToolError
from memory.policy.redaction import redact_value


@dataclass(frozen=True, slots=True)
class Repeated:
    """The note for a call made before in this turn with the same arguments: it is not run
    again (see `Slips.repeated`)."""

    text: str


Told = Ok | ToolError | Repeated  # what the model is told of a call


@dataclass(slots=True)
class Turn:
    """A turn in flight: its messages, the tool calls of the current round still to run,
    and the tools it offers (worked out once per turn; not saved)."""

    messages: list[dict[str, Any]]
    round: int = 1
    pending: list[PendingCall | BrokenCall] = dataclasses.field(default_factory=list)
    tools: dict[str, Tool] = dataclasses.field(default_factory=dict)
    # The final answer as the model wrote it, before it was trimmed, masked or cut: the next
    # turns send it so, and the model's cache of the prompt holds past it.
    said: str = ""
    nudged: bool = False  # the model was told once that its answer was empty
    intent_nudged: bool = False  # ... that it announced a call it did not make
    mistakes: list[str] = dataclasses.field(default_factory=list)  # told to the model
    start: int = -1  # the index of the person's message in `messages`; -1: the last
    # How each call was answered, by the index of its answer in `messages`.
    outcomes: dict[int, Outcome] = dataclasses.field(default_factory=dict)

    @classmethod
    def resumed(cls, saved: SuspendedTurn, held: HeldCalls, tools: dict[str, Tool]) -> Turn:
        """The turn `saved` waited in, its held arguments taken back, offering `tools`."""
        return cls(
            list(saved.messages),
            saved.round,
            [held.take(call) for call in saved.pending],
            tools,
            mistakes=list(saved.mistakes),
            start=saved.start,
            outcomes=dict(saved.outcomes),
        )

    def __post_init__(self) -> None:
        if self.start < 0:
            users = [i for i, m in enumerate(self.messages) if m.get("role") == "user"]
            self.start = users[-1] if users else 0

    def since_question(self) -> list[dict[str, Any]]:
        """The messages after the person's, nudges included: this turn's work."""
        return self.messages[self.start + 1 :]

    def tell(self, name: str, told: Told) -> None:
        """Answer a call of `name`: the model gets the text, the turn keeps how it ended."""
        self.outcomes[len(self.messages)] = _outcome(told)
        self.messages.append({"role": "tool", "tool_name": name, "content": told.text})

    def earlier_result(self, name: str, arguments: Any) -> str | None:
        """What a call of `name` with these arguments gave earlier in this turn; an error
        does not count (the mistake is told once, see `Slips.mistake`)."""
        wanted = (name, _canonical(arguments))
        for call, result, outcome in _calls_and_results(self):
            if call == wanted and outcome is not Outcome.ERROR:
                return result
        return None

    def saved(self, ctx: TurnContext, tool: str, held: HeldCalls) -> SuspendedTurn:
        """What a proposal keeps to resume this turn; `tool` gets the decision. Stored with
        the proposal, so no secret in it reaches the database: the round's later calls
        whose arguments hold one wait in memory (`held`)."""
        return SuspendedTurn(
            tool=tool,
            messages=tuple(redact_value(self.messages, known=held.secrets)),
            round=self.round,
            pending=tuple(held.keep(call) for call in self.pending),
            conversation=ctx.conversation,
            author=ctx.author,
            read_only=ctx.read_only,
            start=self.start,
            mistakes=tuple(redact_value(self.mistakes, known=held.secrets)),
            outcomes=dict(self.outcomes),
        )


class HeldCalls:
    """Tool calls of a suspended turn whose arguments hold a secret: the database gets them
    redacted, and the exact arguments wait in this process's memory until the turn resumes
    (after a restart they are gone, and the call is not run)."""

    def __init__(self, known: Sequence[str]) -> None:
        self.secrets = tuple(known)
        self._held = HeldArguments()

    def keep(self, call: PendingCall | BrokenCall) -> PendingCall | BrokenCall:
        """The call as it is stored: redacted, its exact arguments held, when they hold a
        secret."""
        exact = call.problem if isinstance(call, BrokenCall) else call.arguments
        shown = redact_value(exact, known=self.secrets)
        if shown == exact:
            return call
        token = self._held.keep(exact)
        if isinstance(call, BrokenCall):
            return BrokenCall(shown, token)
        return PendingCall(call.name, shown, token)

    def take(self, saved: PendingCall | BrokenCall) -> PendingCall | BrokenCall:
        """A stored call to run: with its exact arguments, or in place of a call whose
        secret is gone, the problem."""
        if not saved.held:
            return saved
        exact = self._held.take(saved.held)
        name = saved.name if isinstance(saved, PendingCall) else ""
        if exact is None:
            return BrokenCall(f"the call of {name} was not run: {LOST}; ask the person again")
        return PendingCall(name, exact) if isinstance(saved, PendingCall) else BrokenCall(exact)


def _as_object(arguments: Any) -> Any:
    return arguments if isinstance(arguments, dict) else {"raw": str(arguments)}


def echo(call: ToolCall) -> dict[str, Any]:
    """A call as the next request shows it to the model; a malformed one without arguments."""
    arguments = {} if call.problem else _as_object(call.arguments)
    return {"function": {"name": call.name, "arguments": arguments}}


def pending_call(call: ToolCall) -> PendingCall | BrokenCall:
    """A call still to run; a malformed one carries its problem."""
    if call.problem or not call.name:
        return BrokenCall(call.problem or str(call.arguments))
    return PendingCall(call.name, call.arguments)


def _canonical(arguments: Any) -> str:
    return json.dumps(_as_object(arguments), sort_keys=True, default=str)


def _outcome(told: Told) -> Outcome:
    if isinstance(told, ToolError):
        return Outcome.ERROR
    return Outcome.REPEATED if isinstance(told, Repeated) else Outcome.OK


def _calls_and_results(turn: Turn) -> Iterator[tuple[tuple[str, str], str, Outcome]]:
    """Each call of this turn (name and arguments) with its result and how it ended: a
    model message's calls are answered in order by the tool messages after it."""
    waiting: list[tuple[str, str]] = []
    for i, message in enumerate(turn.since_question(), start=turn.start + 1):
        if message.get("role") == "assistant":
            waiting = [
                (c["function"]["name"], _canonical(c["function"]["arguments"]))
                for c in message.get("tool_calls") or []
            ]
        elif message.get("role") == "tool" and waiting:
            outcome = turn.outcomes.get(i, Outcome.OK)
            yield waiting.pop(0), str(message.get("content", "")), outcome


def tool_results(turn: Turn) -> list[tuple[str, str, Outcome]]:
    """The tools run in this turn, in order, with what each gave and how it ended."""
    return [
        (str(m.get("tool_name", "")), str(m.get("content", "")), turn.outcomes.get(i, Outcome.OK))
        for i, m in enumerate(turn.since_question(), start=turn.start + 1)
        if m.get("role") == "tool"
    ]


def clip_name(name: str, limit: int = 64) -> str:
    return name if len(name) <= limit else name[:limit] + "…"


def calls_this_round(messages: Sequence[dict[str, Any]]) -> int:
    """Tool results since the model's last message: the calls of this round already run."""
    count = 0
    for message in reversed(messages):
        if message.get("role") != "tool":
            return count
        count += 1
    return count


def cards_this_turn(turn: Turn, proposing: frozenset[str]) -> int:
    """Proposal tools that ran since the person's message, each of which showed a card."""
    return sum(
        name in proposing and outcome is not Outcome.ERROR
        for name, _, outcome in tool_results(turn)
    )
