"""People and rooms whose platform ids are not Slack- or Discord-shaped (Matrix's
`!room:server` and `@user:server`) save and find notes through the real core, and one room
never sees another's."""

from __future__ import annotations

from pathlib import Path

from adapters.base import APPROVE, ConversationRef, UserRef
from bot.context.scopes import channel_scope, user_scope
from memory import Scope
from memory.scope_ids import raw_id
from tests.fakes.adapter import PLATFORM
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

ROOM = "!OGEhHVWSdvArJzumhm:matrix.org"
OTHER_ROOM = "!xYzAbCdEfGhIjKlMnO:matrix.org"
ALICE = "@alice:matrix.org"
ROOM_SCOPE = "channel:test/%21OGEhHVWSdvArJzumhm%3Amatrix.org"


async def test_a_note_saved_in_a_matrix_room_is_found_there_and_not_in_another(
    harness: Harness,
) -> None:
    harness.script_title("staging-db", "staging DB is pg-stage-2")
    await harness.say("remember that the staging DB is pg-stage-2", user=ALICE, channel=ROOM)
    [card] = harness.adapter.cards
    assert ROOM_SCOPE in card.text
    await harness.react(card, APPROVE, user=ALICE)
    assert card.current.startswith("✅ Saved `staging-db`")

    [note] = await harness.bot.notes.list_notes()
    assert str(note.scope) == channel_scope(ConversationRef(PLATFORM, ROOM)) == ROOM_SCOPE
    assert raw_id(note.scope.id) == ROOM
    assert note.author == user_scope(UserRef(PLATFORM, ALICE)) == "user:test/@alice%3Amatrix.org"

    await harness.say("what do you remember about staging", user=ALICE, channel=ROOM)
    assert "pg-stage-2" in harness.adapter.replies[-1]
    await harness.say("what do you remember about staging", user=ALICE, channel=OTHER_ROOM)
    assert harness.adapter.replies[-1].startswith("I remember nothing")


async def test_a_matrix_user_keeps_private_notes_in_a_dm(harness: Harness) -> None:
    await harness.say("remember that my locker code is 4711", user=ALICE, dm=True)
    [card] = harness.adapter.cards
    await harness.react(card, APPROVE, user=ALICE)
    [note] = await harness.bot.notes.list_notes()
    assert note.scope == Scope.parse("user:test/@alice%3Amatrix.org") and note.private

    await harness.say("what do you remember?", user=ALICE, dm=True)
    assert "my locker code is 4711" in harness.adapter.replies[-1]
    await harness.say("what do you remember?", user=ALICE, channel=ROOM)
    assert "4711" not in harness.adapter.replies[-1]


async def test_an_id_too_long_for_any_scope_gets_a_clear_answer_and_others_go_on(
    harness: Harness,
) -> None:
    await harness.say("what do you remember?", channel="!" + "x" * 300 + ":matrix.org")
    [answer] = harness.adapter.replies
    assert answer.startswith("⚠️") and "at most 255" in answer
    await harness.say("help", channel=ROOM)
    assert "remember that" in harness.adapter.replies[-1]


async def test_with_allowlists_an_id_too_long_for_any_scope_is_dropped(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    allowed = {"allowed_channels": [ROOM_SCOPE]}
    h = await start_harness(tmp_path, fake_ollama, clock, bot=allowed)
    try:
        await h.say("help", channel="!" + "x" * 300 + ":matrix.org")
        assert h.adapter.sent == []  # dropped with a log line, not a failed event
        await h.say("help", channel=ROOM)
        assert "remember that" in h.adapter.replies[-1]
    finally:
        await h.bot.stop()
