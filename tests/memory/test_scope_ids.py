"""Scope ids: any id a platform has fits a scope, written with %XX escapes, while the
Slack and Discord ids already stored in databases keep exactly their spelling."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.base import ConversationRef, UserRef
from bot.context.scopes import channel_scope, team_scope, user_scope
from memory import InvalidInput, NoteDraft, Scope, Viewer, visibility_for
from memory.scope_ids import SCOPE_ID_MAX_CHARS, raw_id, scope_id
from memory.sqlite.notes import SqliteNoteStore

ROOM = "!OGEhHVWSdvArJzumhm:matrix.org"
OTHER_ROOM = "!xYzAbCdEfGhIjKlMnO:matrix.org"
ALICE = "@alice:matrix.org"

# Ids as Slack, Discord and the console spell them, and scope texts as databases hold them.
TODAY = [
    "C0123ABCD",
    "U024BE7LH",
    "T0001",
    "D024BE91L",
    "W012A3CDE",
    "E0KH3SHF0",
    "1100223344556677889",
    "alice",
    "me",
    "john.doe",
    "ops@example.com",
    "D-UALICE",
    "a_b-c",
]
_OLD_ID = re.compile(r"[A-Za-z0-9_.@-]{1,128}")  # whole ids: `$` would allow a final "\n"


@pytest.mark.parametrize("raw", TODAY)
def test_slack_and_discord_ids_are_written_as_before(raw: str) -> None:
    assert scope_id(raw) == raw
    for kind in ("user", "channel", "team"):
        text = f"{kind}:slack/{raw}"
        assert str(Scope.parse(text)) == text
    assert user_scope(UserRef("slack", raw)) == f"user:slack/{raw}"
    conversation = ConversationRef("discord", raw, team_id=raw)
    assert channel_scope(conversation) == f"channel:discord/{raw}"
    assert team_scope(conversation) == f"team:discord/{raw}"


def test_matrix_ids_are_escaped_and_parse() -> None:
    room = ConversationRef("matrix", ROOM, team_id="matrix.org")
    assert channel_scope(room) == "channel:matrix/%21OGEhHVWSdvArJzumhm%3Amatrix.org"
    assert team_scope(room) == "team:matrix/matrix.org"
    assert user_scope(UserRef("matrix", ALICE)) == "user:matrix/@alice%3Amatrix.org"
    scope = Scope.parse(channel_scope(room))
    assert raw_id(scope.id) == ROOM and str(scope) == channel_scope(room)


def test_percent_itself_is_escaped_so_ids_never_collide() -> None:
    assert scope_id("100%") == "100%25"
    assert scope_id("%21") == "%2521" != scope_id("!")
    assert raw_id(scope_id("%21")) == "%21"


def test_ids_of_only_dots_are_escaped_and_not_path_steps() -> None:
    assert scope_id(".") == "%2E" and scope_id("..") == "%2E%2E"
    assert raw_id(Scope.parse("channel:x/%2E%2E").id) == ".."
    with pytest.raises(InvalidInput):
        Scope.parse("channel:x/..")


def test_one_spelling_per_id() -> None:
    """Scopes are compared as text, so a hand-typed scope is made canonical."""
    assert str(Scope.parse("channel:matrix/%21abc%3amatrix.org")) == (
        "channel:matrix/%21abc%3Amatrix.org"
    )
    assert str(Scope.parse("channel:slack/%43%30%31")) == "channel:slack/C01"


@pytest.mark.parametrize(
    "text", ["channel:matrix/!abc:matrix.org", "channel:x/100%", "channel:x/%zz", "user:x/%FF"]
)
def test_unescaped_or_broken_ids_are_refused(text: str) -> None:
    with pytest.raises(InvalidInput):
        Scope.parse(text)


def test_long_ids_fit_up_to_the_limit_and_are_refused_with_a_reason_beyond() -> None:
    assert scope_id("x" * SCOPE_ID_MAX_CHARS) == "x" * 255
    assert str(Scope.parse("channel:slack/" + "x" * 255)).endswith("x" * 255)
    with pytest.raises(InvalidInput, match="too long for a memory scope.*at most 255"):
        scope_id("x" * 256)
    with pytest.raises(InvalidInput, match="at most 255"):
        scope_id("é" * 43)  # 258 characters once each é is %C3%A9
    with pytest.raises(InvalidInput, match="at most 255"):
        Scope.parse("channel:slack/" + "x" * 256)
    with pytest.raises(InvalidInput, match="empty"):
        scope_id("")


@given(st.text(min_size=1, max_size=21))  # 21 four-byte characters fit in 255
def test_any_id_round_trips_and_old_ids_stay_unchanged(raw: str) -> None:
    escaped = scope_id(raw)
    assert raw_id(escaped) == raw
    scope = Scope.parse(f"user:matrix/{escaped}")
    assert scope.id == escaped
    if _OLD_ID.fullmatch(raw) and set(raw) != {"."}:
        assert escaped == raw


async def test_a_note_of_a_matrix_room_is_seen_in_that_room_only(store: SqliteNoteStore) -> None:
    room = Scope.parse(channel_scope(ConversationRef("matrix", ROOM)))
    other = Scope.parse(channel_scope(ConversationRef("matrix", OTHER_ROOM)))
    alice = Scope.parse(user_scope(UserRef("matrix", ALICE)))
    await store.save(NoteDraft(room, "staging-db", "staging DB is pg-stage-2"), actor="t")
    await store.save(NoteDraft(alice, "editor", "alice uses helix", private=True), actor="t")

    in_room = visibility_for(Viewer(alice, room, None))
    [hit] = await store.search("staging", in_room)
    assert hit.note.scope == room and raw_id(hit.note.scope.id) == ROOM
    assert await store.search("helix", in_room) == []  # private: only in her DMs

    in_other_room = visibility_for(Viewer(alice, other, None))
    assert await store.search("staging", in_other_room) == []
    [dm_hit] = await store.search("helix", visibility_for(Viewer(alice, None, None)))
    assert dm_hit.note.scope == alice
