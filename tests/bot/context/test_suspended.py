"""A suspended turn as its proposal stores it: read back as a typed value, the shape every
earlier lorebot stored included, and a stored turn this lorebot cannot read refused with a
reason."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from adapters.base import ConversationRef, UserRef
from bot.context.suspended import (
    VERSION,
    BrokenCall,
    Outcome,
    PendingCall,
    SuspendedTurn,
    UnreadableTurn,
    waiting_turn,
)

MESSAGES = [
    {"role": "system", "content": "You are lorebot."},
    {"role": "user", "content": "restart web, then check it"},
    {"role": "assistant", "content": "", "tool_calls": []},
    {"role": "tool", "tool_name": "ops__uptime", "content": "web: up 3 days"},
    {"role": "tool", "tool_name": "launch", "content": "error: there is no tool named 'launch'"},
    {"role": "tool", "tool_name": "ops__uptime", "content": "You already called ops__uptime …"},
]


def stored_before_versions(**changes: Any) -> dict[str, Any]:
    """A turn as lorebot stored it before the stored shape had a version (version 1)."""
    turn = {
        "tool": "ops__restart",
        "messages": MESSAGES,
        "round": 2,
        "pending": [
            ["ops__status", {"service": "web"}],
            ["ops__login", {"token": "[REDACTED]"}, "9f1c"],
            ["", "arguments are not valid JSON"],
        ],
        "conversation": {
            "platform": "test",
            "channel_id": "C1",
            "is_dm": False,
            "thread_id": None,
            "team_id": None,
            "reply_to": None,
        },
        "author": {"platform": "test", "id": "UALICE", "name": "alice", "is_bot": False},
        "read_only": False,
        "start": 1,
        "mistakes": ["error: there is no tool named 'launch'"],
    }
    turn.update(changes)
    return turn


def test_a_turn_stored_before_versions_is_read_as_version_1() -> None:
    turn = SuspendedTurn.from_json(stored_before_versions())
    assert turn.version == 1 and turn.tool == "ops__restart" and turn.round == 2
    assert turn.pending == (
        PendingCall("ops__status", {"service": "web"}),
        PendingCall("ops__login", {"token": "[REDACTED]"}, held="9f1c"),
        BrokenCall("arguments are not valid JSON"),
    )
    assert turn.conversation == ConversationRef("test", "C1")
    assert turn.author == UserRef("test", "UALICE", "alice")
    assert turn.messages == tuple(MESSAGES) and turn.start == 1
    assert turn.mistakes == ("error: there is no tool named 'launch'",)
    assert turn.context().conversation == turn.conversation


def test_how_a_version_1_turns_calls_ended_is_read_from_what_the_model_was_told() -> None:
    turn = SuspendedTurn.from_json(stored_before_versions())
    assert turn.outcomes == {3: Outcome.OK, 4: Outcome.ERROR, 5: Outcome.REPEATED}


def test_the_oldest_turns_wait_on_a_skills_load_and_start_at_the_last_question() -> None:
    oldest = stored_before_versions()
    for key in ("tool", "start", "mistakes"):
        del oldest[key]
    turn = SuspendedTurn.from_json(oldest)
    assert (turn.tool, turn.start, turn.mistakes) == ("load_skill", -1, ())


def test_a_turn_is_written_in_the_current_version_and_reads_back_as_it_was() -> None:
    turn = SuspendedTurn.from_json(stored_before_versions())
    stored = json.loads(json.dumps(turn.to_json()))
    assert stored["version"] == VERSION == 2
    assert stored["pending"] == [
        {"name": "ops__status", "arguments": {"service": "web"}},
        {"name": "ops__login", "arguments": {"token": "[REDACTED]"}, "held": "9f1c"},
        {"problem": "arguments are not valid JSON"},
    ]
    assert stored["outcomes"] == {"3": "ok", "4": "error", "5": "repeated"}
    assert SuspendedTurn.from_json(stored) == dataclasses.replace(turn, version=VERSION)


def test_a_proposal_without_a_turn_has_none_waiting() -> None:
    assert waiting_turn({"topic": "staging-db"}) is None
    assert waiting_turn({"turn": stored_before_versions()}) is not None


def test_a_turn_of_an_unknown_version_is_refused_saying_which() -> None:
    with pytest.raises(UnreadableTurn, match="version 99, which this lorebot does not read"):
        SuspendedTurn.from_json(stored_before_versions(version=99))
    with pytest.raises(UnreadableTurn, match="version '2'"):
        SuspendedTurn.from_json(stored_before_versions(version="2"))


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"messages": "hello"}, "messages"),
        ({"round": "2"}, "round"),
        ({"read_only": "no"}, "read_only"),
        ({"pending": [["ops__status"]]}, "pending call"),
        ({"pending": [[7, {}]]}, "name"),
        ({"conversation": {"platform": "test", "channel": "C1"}}, "channel"),
    ],
)
def test_a_malformed_turn_is_refused_saying_what_is_wrong(
    changes: dict[str, Any], says: str
) -> None:
    with pytest.raises(UnreadableTurn, match=says):
        SuspendedTurn.from_json(stored_before_versions(**changes))


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"outcomes": {"3": "maybe"}}, "maybe"),
        ({"outcomes": {"three": "ok"}}, "three"),
        ({"pending": [{"name": "", "arguments": {}}]}, "no name"),
        ({"pending": [["ops__status", {}]]}, "pending call is list"),
    ],
)
def test_a_malformed_version_2_turn_is_refused_saying_what_is_wrong(
    changes: dict[str, Any], says: str
) -> None:
    stored = SuspendedTurn.from_json(stored_before_versions()).to_json()
    with pytest.raises(UnreadableTurn, match=f"not a version 2 turn.*{says}"):
        SuspendedTurn.from_json({**stored, **changes})


def test_a_turn_that_is_no_object_is_refused() -> None:
    with pytest.raises(UnreadableTurn, match="list"):
        SuspendedTurn.from_json([1, 2])
    without = stored_before_versions()
    del without["messages"]
    with pytest.raises(UnreadableTurn, match="messages"):
        SuspendedTurn.from_json(without)
