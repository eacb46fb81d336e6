"""An import is one change set of many notes: shown once, per scope counting only that
scope's notes, and reverted (or undone) as a whole, leaving notes changed since alone; on
both engines."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memory import Conflict, NoteDraft, NotFound, Scope, Viewer, visibility_for
from memory.policy.visibility import explicit
from memory.stores.notes import NoteStore
from tests.support.clock import FakeClock

C1 = Scope.parse("channel:slack/C1")
C2 = Scope.parse("channel:slack/C2")
ALICE = Scope.parse("user:slack/UALICE")
ACTOR = "cli:ops"


@pytest.fixture
def store(engine_stores: Any) -> NoteStore:
    """The note store on each engine."""
    notes: NoteStore = engine_stores.notes
    return notes


def draft(scope: Scope, topic: str, summary: str, **fields: object) -> NoteDraft:
    return NoteDraft(scope, topic, summary, **fields)  # type: ignore[arg-type]


def batch() -> list[NoteDraft]:
    """Two notes of C1, one of C2 and two of Alice's DM scope (one private)."""
    return [
        draft(C1, "staging-db", "staging is on zebra"),
        draft(C1, "vpn", "the VPN gateway is vpn-2"),
        draft(C2, "deploys", "deploys freeze on fridays"),
        draft(ALICE, "editor", "alice prefers vim"),
        draft(ALICE, "salary-talk", "alice asked about a raise", private=True),
    ]


async def change_rows(store: NoteStore) -> int:
    history = await store.fetch_history(limit=1000)
    return len(history)


async def summaries(store: NoteStore) -> dict[tuple[str, str], str]:
    return {(str(n.scope), n.topic): n.summary for n in await store.list_notes()}


async def test_an_import_is_one_change_counting_its_notes(
    store: NoteStore, clock: FakeClock
) -> None:
    await store.save(draft(C1, "staging-db", "staging is on giraffe"), actor="alice")
    clock.advance(minutes=1)

    result = await store.import_drafts(batch(), actor=ACTOR)

    assert (result.created, result.updated, result.unchanged) == (4, 1, 0)
    history = await store.fetch_history()
    assert [(c.action, c.scope, c.topic, c.notes) for c in history] == [
        ("import", None, None, 5),
        ("create", C1, "staging-db", None),
    ]
    assert history[0].id == result.change_id and history[0].actor == ACTOR
    assert (history[0].before, history[0].after) == (None, None)
    assert await store.fetch_change(history[0].id) == history[0]
    assert await change_rows(store) == 2  # no change set per note


async def test_reverting_an_import_removes_its_notes_and_restores_those_it_updated(
    store: NoteStore, clock: FakeClock
) -> None:
    await store.save(draft(C1, "staging-db", "staging is on giraffe", body="old"), actor="a")
    await store.save(draft(C1, "kept", "a note the import leaves alone"), actor="a")
    before = await store.fetch(C1, "staging-db")
    clock.advance(minutes=1)
    imported = await store.import_drafts(batch(), actor=ACTOR)
    assert imported.change_id is not None
    clock.advance(minutes=1)

    revert = await store.revert(imported.change_id, actor="cli:root")

    assert await summaries(store) == {
        ("channel:slack/C1", "kept"): "a note the import leaves alone",
        ("channel:slack/C1", "staging-db"): "staging is on giraffe",
    }
    after = await store.fetch(C1, "staging-db")
    assert after is not None and before is not None
    assert (after.body, after.created_at, after.updated_at) == (
        before.body,
        before.created_at,
        before.updated_at,
    )
    viewer = visibility_for(Viewer(ALICE, C1))
    assert [h.note.topic for h in await store.search("zebra vpn", viewer)] == []
    assert [h.note.topic for h in await store.search("giraffe", viewer)] == ["staging-db"]
    # The revert is itself one change, seen in history; the import says who reverted it.
    assert (revert.action, revert.scope, revert.topic, revert.notes) == ("revert", None, None, 5)
    assert revert.reason == f"revert of change {imported.change_id}"
    assert (await store.fetch_change(imported.change_id)).reverted_by == revert.id
    assert [c.id for c in await store.fetch_history(limit=1)] == [revert.id]
    with pytest.raises(Conflict, match="already reverted"):
        await store.revert(imported.change_id, actor="cli:root")


async def test_reverting_the_revert_of_an_import_brings_its_notes_back(
    store: NoteStore,
) -> None:
    imported = await store.import_drafts(batch(), actor=ACTOR)
    assert imported.change_id is not None
    written = await summaries(store)
    revert = await store.revert(imported.change_id, actor=ACTOR)
    await store.revert(revert.id, actor=ACTOR)
    assert await summaries(store) == written


async def test_undo_reverts_the_latest_import_as_a_whole(store: NoteStore) -> None:
    await store.save(draft(C1, "older", "an older note"), actor=ACTOR)
    await store.import_drafts(batch(), actor=ACTOR)

    undone = await store.undo(ACTOR)

    assert undone.notes == 5 and undone.reason.startswith("undo of change ")
    assert list(await summaries(store)) == [("channel:slack/C1", "older")]
    assert (await store.undo(ACTOR)).topic == "older"
    with pytest.raises(NotFound):
        await store.undo(ACTOR)


async def test_a_note_of_an_import_is_forgotten_alone_as_a_change_of_its_own(
    store: NoteStore,
) -> None:
    imported = await store.import_drafts(batch(), actor=ACTOR)
    assert imported.change_id is not None

    forget = await store.forget(C1, "vpn", actor="alice")

    assert (forget.action, forget.scope, forget.topic, forget.notes) == ("forget", C1, "vpn", None)
    assert forget.before is not None and forget.before["summary"] == "the VPN gateway is vpn-2"
    assert len(await store.list_notes()) == 4
    assert (await store.fetch_change(imported.change_id)).reverted_by is None
    await store.revert(forget.id, actor="alice")
    assert (await store.fetch(C1, "vpn")) is not None


async def test_the_revert_of_an_import_leaves_notes_changed_after_it_as_they_are(
    store: NoteStore,
) -> None:
    """Each note goes back only if no later change touched it: a later edit, a forget of
    one imported note or a later import of it stay; the revert counts what it did."""
    imported = await store.import_drafts(batch(), actor=ACTOR)
    assert imported.change_id is not None
    await store.save(draft(C1, "staging-db", "staging moved to yak"), actor="alice")
    await store.forget(C1, "vpn", actor="alice")
    later = await store.import_drafts(
        [draft(C2, "deploys", "deploys freeze on thursdays")], actor=ACTOR
    )

    revert = await store.revert(imported.change_id, actor=ACTOR)

    assert revert.notes == 2  # Alice's two notes; the other three changed since
    assert await summaries(store) == {
        ("channel:slack/C1", "staging-db"): "staging moved to yak",
        ("channel:slack/C2", "deploys"): "deploys freeze on thursdays",
    }
    assert later.change_id is not None
    await store.revert(later.change_id, actor=ACTOR)
    assert (await summaries(store))[("channel:slack/C2", "deploys")] == (
        "deploys freeze on fridays"
    )


async def test_an_import_whose_notes_all_changed_since_is_not_reverted(
    store: NoteStore,
) -> None:
    imported = await store.import_drafts([draft(C1, "vpn", "vpn-2")], actor=ACTOR)
    assert imported.change_id is not None
    await store.save(draft(C1, "vpn", "vpn-3"), actor="alice")
    with pytest.raises(Conflict, match="changed after it"):
        await store.revert(imported.change_id, actor=ACTOR)
    assert (await store.fetch_change(imported.change_id)).reverted_by is None
    assert await summaries(store) == {("channel:slack/C1", "vpn"): "vpn-3"}


async def test_a_scopes_history_shows_the_import_counting_only_that_scopes_notes(
    store: NoteStore, clock: FakeClock
) -> None:
    start = clock.now
    imported = await store.import_drafts(batch(), actor=ACTOR)
    clock.advance(minutes=1)

    [in_c1] = await store.fetch_history(C1)
    [in_alice] = await store.fetch_history(ALICE)
    [of_note] = await store.fetch_history(C1, "vpn")
    [between] = await store.fetch_changes_between(C1, start, clock.now)

    assert (in_c1.id, in_c1.action, in_c1.scope, in_c1.topic, in_c1.notes) == (
        imported.change_id,
        "import",
        C1,
        None,
        2,
    )
    assert (in_c1.before, in_c1.after) == (None, None)  # nothing of the DM notes
    assert between == in_c1
    assert (in_alice.scope, in_alice.notes) == (ALICE, 2)
    assert (of_note.scope, of_note.topic, of_note.before, of_note.notes) == (C1, "vpn", None, 1)
    assert [c.scope for c in await store.fetch_history(topic="editor")] == [ALICE]
    assert await store.fetch_history(Scope.parse("channel:slack/C9")) == []
    assert await store.fetch_history(C1, "nope") == []


async def test_undo_in_a_conversation_reaches_an_import_only_when_it_sees_all_of_it(
    store: NoteStore,
) -> None:
    """Undo in a channel never reverts notes it may not see: an import that touched a
    person's DM notes (or another channel) is out of its reach."""
    await store.import_drafts(batch(), actor=ACTOR)
    for visibility in (
        visibility_for(Viewer(ALICE, C1)),
        visibility_for(Viewer(ALICE)),
        explicit((C1, C2)),
    ):
        with pytest.raises(NotFound):
            await store.undo(ACTOR, visibility=visibility)
    assert len(await store.list_notes()) == 5
    undone = await store.undo(ACTOR, visibility=explicit((C1, C2, ALICE)))
    assert undone.notes == 5 and await store.list_notes() == []

    await store.import_drafts(batch()[:2], actor=ACTOR)  # C1 only
    assert (await store.undo(ACTOR, visibility=visibility_for(Viewer(ALICE, C1)))).notes == 2


async def test_a_second_import_of_the_same_drafts_changes_nothing(
    store: NoteStore, clock: FakeClock
) -> None:
    first = await store.import_drafts(batch(), actor=ACTOR)
    history = await store.fetch_history()
    clock.advance(days=1)

    again = await store.import_drafts(batch(), actor=ACTOR)

    assert (again.created, again.updated, again.unchanged, again.change_id) == (0, 0, 5, None)
    assert await store.fetch_history() == history
    assert await change_rows(store) == 1 and first.change_id == history[0].id


async def test_a_topic_repeated_in_an_import_is_one_note_of_its_change(
    store: NoteStore,
) -> None:
    drafts = [
        draft(C1, "vpn", "vpn-1"),
        draft(C1, "vpn", "vpn-2"),
        draft(C1, "dns", "dns-1", expires_at=None),
    ]
    result = await store.import_drafts(drafts, actor=ACTOR)
    assert (result.created, result.updated) == (2, 1)
    [change] = await store.fetch_history()
    assert change.notes == 2
    assert [c.before for c in await store.fetch_history(C1, "vpn")] == [None]
    assert change.id is not None
    await store.revert(change.id, actor=ACTOR)
    assert await store.list_notes() == []


async def test_expired_imported_notes_are_purged_as_changes_of_their_own(
    store: NoteStore, clock: FakeClock
) -> None:
    lesson = draft(C1, "lesson", "check disk first", expires_at=clock.now + timedelta(days=1))
    imported = await store.import_drafts([lesson, draft(C1, "vpn", "vpn-2")], actor=ACTOR)
    clock.advance(days=2)
    assert await store.purge_expired() == 1
    assert imported.change_id is not None
    revert = await store.revert(imported.change_id, actor=ACTOR)
    assert revert.notes == 1 and await store.list_notes() == []
