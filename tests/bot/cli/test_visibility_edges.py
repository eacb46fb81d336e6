"""Which notes a person may change from a conversation, and the CLI's word when a search
names the wrong kind of scope: the edges of `memory.policy.visibility` that people meet."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.base import ConversationRef, Message, UserRef
from bot.cli.main import main
from memory import NoteDraft, Scope
from tests.fakes.adapter import PLATFORM
from tests.support.harness import Harness

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

ALICE = Scope.parse(f"user:{PLATFORM}/UALICE")
TEAM = Scope.parse(f"team:{PLATFORM}/T1")


async def test_a_person_may_forget_their_own_public_note_from_a_channel(
    harness: Harness,
) -> None:
    await harness.bot.notes.save(NoteDraft(ALICE, "editor", "prefers vim"), actor="seed")
    await harness.say("forget editor")
    [card] = harness.adapter.cards
    assert "Forget this note?" in card.text and "`editor`" in card.text


async def test_a_team_note_cannot_be_forgotten_from_chat(harness: Harness) -> None:
    """Team notes are read everywhere in the team but changed only by an operator."""
    await harness.bot.notes.save(NoteDraft(TEAM, "vpn", "the VPN is vpn-1"), actor="admin")
    refusal = "I found no note of yours or of this conversation matching “vpn”."
    await harness.say("forget vpn")
    await harness.say("forget vpn", dm=True)
    assert harness.adapter.cards == []
    assert harness.adapter.replies == [refusal, refusal]


async def test_a_dm_outside_any_team_can_still_forget_a_note(harness: Harness) -> None:
    """Discord DMs have no guild, so no team scope: the person's own notes still work."""
    await harness.bot.notes.save(
        NoteDraft(ALICE, "editor", "prefers vim", private=True), actor="seed"
    )
    conversation = ConversationRef(PLATFORM, "D-UALICE", is_dm=True, team_id=None)
    author = UserRef(PLATFORM, "UALICE", "alice")
    await harness.send(Message(conversation, author, "forget editor", "ev-dm", "ev-dm", True))
    [card] = harness.adapter.cards
    assert "`editor`" in card.text


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (["--as", "channel:slack/C1"], "speaker must be a user scope, got channel:slack/C1"),
        (
            ["--as", "user:slack/U1", "--in", "user:slack/U2"],
            "channel must be a channel scope, got user:slack/U2",
        ),
        (
            ["--as", "user:slack/U1", "--team", "channel:slack/C9"],
            "team must be a team scope, got channel:slack/C9",
        ),
    ],
)
def test_notes_search_names_the_scope_of_the_wrong_kind(
    env: Path, capsys: pytest.CaptureFixture[str], flags: list[str], error: str
) -> None:
    code = main(["notes", "search", "vim", *flags])
    assert code == 1
    assert capsys.readouterr().err.strip() == f"lorebot: {error}"
