"""Edges of isolation that the property test does not reach: a person's private notes must
not even compete for a channel's search results."""

from __future__ import annotations

from typing import Any

import pytest

from memory import NoteDraft, Scope, Viewer, visibility_for
from memory.policy.visibility import explicit
from memory.stores.notes import NoteStore

ALICE = Scope.parse("user:slack/U1")
CHANNEL = Scope.parse("channel:slack/C1")


@pytest.fixture
def store(engine_stores: Any) -> NoteStore:
    """The note store on each engine."""
    notes: NoteStore = engine_stores.notes
    return notes


async def test_private_notes_never_crowd_a_channel_note_out_of_channel_search(
    store: NoteStore,
) -> None:
    """Many private notes that match better must not take the places a channel's search
    has, or the channel's own note would go missing."""
    for n in range(12):
        draft = NoteDraft(ALICE, f"deploy-{n}", "deploy deploy deploy", private=True)
        await store.save(draft, actor="alice")
    body = "the release train leaves on thursday; " * 8 + "ask in the channel to deploy"
    await store.save(NoteDraft(CHANNEL, "release", "release train", body), actor="alice")

    in_channel = visibility_for(Viewer(ALICE, CHANNEL))
    hits = await store.search("deploy", in_channel, k=1)
    assert [(h.note.scope, h.note.topic) for h in hits] == [(CHANNEL, "release")]

    in_dm = visibility_for(Viewer(ALICE))
    assert len(await store.search("deploy", in_dm, k=20)) == 12


async def test_a_search_over_many_scopes_finds_only_theirs_however_many_rank_higher(
    store: NoteStore,
) -> None:
    """With more scopes than the word index filters by itself (an admin's search in the
    console), notes outside them that match better still never show, nor push theirs out."""
    mine = tuple(Scope.parse(f"channel:slack/C{n}") for n in range(70))
    for n in range(40):
        outside = Scope.parse(f"user:slack/U{n}")
        await store.save(NoteDraft(outside, "deploy", "deploy deploy deploy"), actor="x")
    for scope in mine[:3]:
        await store.save(NoteDraft(scope, "release", "the release needs a deploy"), actor="x")
    hits = await store.search("deploy", explicit(mine), k=5)
    assert sorted(str(h.note.scope) for h in hits) == [str(s) for s in sorted(mine[:3])]
