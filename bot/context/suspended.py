"""A turn suspended on a card: what its proposal keeps to resume it, as a typed value.

It is read from and written to the proposal's JSON here and nowhere else. The stored shape
carries its version. Version 1 is the shape lorebot stored before it had a number (the
oldest turns lack the tool's name, the person's message and the mistakes): a call was a
list, and how each call ended was only in the text the model was told. Version 2 stores
calls as objects and how each answered call ended.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from adapters.base import ConversationRef, UserRef
from bot.context.turn import TurnContext, make_context
from bot.errors import LorebotError

VERSION = 2  # the shape written now
READ = (1, 2)  # the shapes this lorebot reads
# Turns stored before tools were named all waited on a skill's load.
UNNAMED_TOOL = "load_skill"

# How `Slips.repeated`'s note begins, as a version 1 turn holds it.
_REPEATED_V1 = "You already called "

_T = TypeVar("_T")


class UnreadableTurn(LorebotError):
    """A proposal's stored turn that this lorebot cannot read: the message says why."""


class Outcome(StrEnum):
    """How a call the turn answered ended."""

    OK = "ok"
    ERROR = "error"
    REPEATED = "repeated"  # not run: the same call was answered before in the turn


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A call of the round still to run. A stored one whose arguments held a secret has
    them redacted, and the exact ones wait in memory under `held`."""

    name: str
    arguments: Any
    held: str = ""


@dataclass(frozen=True, slots=True)
class BrokenCall:
    """A call that cannot run (the model sent it malformed, or the secret its arguments
    held is gone): what was wrong, told to the model in its place. A stored one whose
    problem quotes a secret has it redacted, and the exact one waits under `held`."""

    problem: str
    held: str = ""


@dataclass(frozen=True, slots=True)
class SuspendedTurn:
    """A turn waiting for a card: its messages and how each call it answered ended, the
    calls of its round still to run, who asked where, and the tool that gets the decision.
    `version` is the shape it was stored in (a new turn's is `VERSION`); it is always
    written as `VERSION`."""

    tool: str
    messages: tuple[dict[str, Any], ...]
    round: int
    pending: tuple[PendingCall | BrokenCall, ...]
    conversation: ConversationRef
    author: UserRef
    read_only: bool
    start: int = -1  # the person's message in `messages`; -1: the last user message
    mistakes: tuple[str, ...] = ()
    # How each call ended, by the index of its answer in `messages`.
    outcomes: Mapping[int, Outcome] = field(default_factory=dict)
    version: int = VERSION

    def context(self) -> TurnContext:
        """The context the turn runs in again."""
        return make_context(self.conversation, self.author, self.read_only)

    def to_json(self) -> dict[str, Any]:
        """The turn as its proposal stores it."""
        return {
            "version": VERSION,
            "tool": self.tool,
            "messages": list(self.messages),
            "round": self.round,
            "pending": [_call_json(call) for call in self.pending],
            "conversation": dataclasses.asdict(self.conversation),
            "author": dataclasses.asdict(self.author),
            "read_only": self.read_only,
            "start": self.start,
            "mistakes": list(self.mistakes),
            "outcomes": {str(i): outcome.value for i, outcome in self.outcomes.items()},
        }

    @classmethod
    def from_json(cls, stored: object) -> SuspendedTurn:
        """The turn a proposal stored; `UnreadableTurn` when its version is unknown or it is
        not the shape its version says."""
        if not isinstance(stored, Mapping):
            raise UnreadableTurn(f"a waiting turn is stored as an object, not {_type(stored)}")
        version = stored.get("version", 1)
        if not isinstance(version, int) or version not in READ:
            raise UnreadableTurn(
                f"the waiting turn is stored in version {version!r}, which this lorebot does "
                f"not read (it reads versions {', '.join(map(str, READ))})"
            )
        try:
            return _read(stored, version)
        except (KeyError, TypeError, ValueError) as exc:
            raise UnreadableTurn(
                f"the waiting turn is not a version {version} turn: {exc!r}"
            ) from None


def waiting_turn(payload: Mapping[str, Any]) -> SuspendedTurn | None:
    """The turn a proposal's payload keeps to resume, or None when no turn waits on it."""
    stored = payload.get("turn")
    return SuspendedTurn.from_json(stored) if stored else None


def _read(stored: Mapping[str, Any], version: int) -> SuspendedTurn:
    messages = stored["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise TypeError("messages is not a list of objects")
    calls = _typed(stored["pending"], list, "pending")
    if version == 1:
        tool = stored.get("tool", UNNAMED_TOOL)
        pending = tuple(_call_v1(call) for call in calls)
        outcomes = _outcomes_v1(messages)
    else:
        tool = stored["tool"]
        pending = tuple(_call_v2(call) for call in calls)
        told = _typed(stored["outcomes"], dict, "outcomes")
        outcomes = {int(i): Outcome(outcome) for i, outcome in told.items()}
    return SuspendedTurn(
        tool=_typed(tool, str, "tool"),
        messages=tuple(messages),
        round=_typed(stored["round"], int, "round"),
        pending=pending,
        conversation=ConversationRef(**_typed(stored["conversation"], dict, "conversation")),
        author=UserRef(**_typed(stored["author"], dict, "author")),
        read_only=_typed(stored["read_only"], bool, "read_only"),
        start=_typed(stored.get("start", -1), int, "start"),
        mistakes=tuple(str(m) for m in _typed(stored.get("mistakes", []), list, "mistakes")),
        outcomes=outcomes,
        version=version,
    )


def _call_v1(stored: object) -> PendingCall | BrokenCall:
    """Version 1 stores a call as a list: [name, arguments], or [name, redacted arguments,
    token] when the exact ones wait in memory; a call that cannot run has no name and
    carries its problem as the arguments."""
    if not isinstance(stored, list) or len(stored) not in (2, 3):
        raise ValueError(f"a pending call is a list of 2 or 3 items, not {stored!r:.80}")
    name = _typed(stored[0], str, "a pending call's name")
    held = _typed(stored[2], str, "a pending call's token") if len(stored) == 3 else ""
    if not name:
        return BrokenCall(str(stored[1]), held)
    return PendingCall(name, stored[1], held)


def _outcomes_v1(messages: list[dict[str, Any]]) -> dict[int, Outcome]:
    """Version 1 kept only what the model was told: a failed call's answer began with
    "error", and a repeated call's was the note that said so."""
    outcomes = {}
    for i, message in enumerate(messages):
        if message.get("role") != "tool":
            continue
        text = str(message.get("content", ""))
        if text.startswith("error"):
            outcomes[i] = Outcome.ERROR
        else:
            outcomes[i] = Outcome.REPEATED if text.startswith(_REPEATED_V1) else Outcome.OK
    return outcomes


def _call_v2(stored: object) -> PendingCall | BrokenCall:
    call = _typed(stored, dict, "a pending call")
    held = _typed(call.get("held", ""), str, "a pending call's token")
    if "problem" in call:
        return BrokenCall(_typed(call["problem"], str, "a pending call's problem"), held)
    name = _typed(call["name"], str, "a pending call's name")
    if not name:
        raise ValueError("a pending call has no name")
    return PendingCall(name, call["arguments"], held)


def _call_json(call: PendingCall | BrokenCall) -> dict[str, Any]:
    stored: dict[str, Any]
    if isinstance(call, BrokenCall):
        stored = {"problem": call.problem}
    else:
        stored = {"name": call.name, "arguments": call.arguments}
    return {**stored, "held": call.held} if call.held else stored


def _typed(value: object, kind: type[_T], what: str) -> _T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{what} is {_type(value)}, not {kind.__name__}")
    return value


def _type(value: object) -> str:
    return type(value).__name__
