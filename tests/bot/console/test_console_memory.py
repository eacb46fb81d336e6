"""The memory pages: a person reads what chat lets them read, searches it with chat's
ranking, and forgets, edits and undoes notes as change sets of their own, by chat's rules;
an address with another person's note or scope shows nothing of it."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from memory import NoteDraft, Scope
from memory.types import Note
from tests.support.clock import FakeClock
from tests.support.console import ConsoleHarness

pytestmark = pytest.mark.usefixtures("on_each_engine")

ALICE = "user:test/UALICE"
BOB = "user:test/UBOB"
CHANNEL = "channel:test/C1"
TEAM = "team:test/T1"


async def note(console: ConsoleHarness, scope: str, topic: str, summary: str, **kw: Any) -> Note:
    notes = console.h.bot.services.stores.notes
    saved = await notes.save(
        NoteDraft(Scope.parse(scope), topic, summary, **kw), actor="user:test/USEED"
    )
    return saved.note


async def test_a_member_reads_their_own_notes_private_ones_too(console: ConsoleHarness) -> None:
    mine = await note(console, ALICE, "my-diet", "alice is vegetarian", private=True)
    await note(console, BOB, "bob-diet", "bob eats fish")
    alice = await console.signed_in(ALICE)

    page = await alice.get("/memory")
    assert ALICE in page.text and BOB not in page.text
    page = await alice.get(f"/notes/{mine.id}")
    assert page.status == 200 and "alice is vegetarian" in page.text and "private" in page.text


async def test_another_persons_note_or_scope_in_the_address_is_not_found(
    console: ConsoleHarness,
) -> None:
    secret = await note(console, BOB, "bob-diet", "bob eats fish", private=True)
    alice = await console.signed_in(ALICE)
    page = await alice.get(f"/notes/{secret.id}")
    assert page.status == 404 and "bob eats fish" not in page.text
    assert page.text.count("There is nothing here that you can see.") == 1
    assert (await alice.get(f"/notes/{secret.id + 1000}")).text == page.text  # alike
    page = await alice.get(f"/memory/notes?scope={BOB}")
    assert page.status == 404 and "bob-diet" not in page.text
    [change] = await console.h.bot.notes.fetch_history(Scope.parse(BOB), "bob-diet")
    page = await alice.get(f"/changes/{change.id}")
    assert page.status == 404 and "bob eats fish" not in page.text
    page = await alice.post(f"/notes/{secret.id}/forget", {}, csrf=(await alice.get("/")).csrf)
    assert page.status == 404
    assert await console.h.bot.notes.fetch(Scope.parse(BOB), "bob-diet") is not None


async def test_search_ranks_as_chat_and_finds_only_what_the_person_may_read(
    console: ConsoleHarness,
) -> None:
    await note(console, ALICE, "deploys", "alice deploys on fridays")
    await note(console, BOB, "deploy-secrets", "bob deploys with the red key", private=True)
    await note(console, CHANNEL, "deploy-window", "deploys happen after noon")
    alice = await console.signed_in(ALICE)
    page = await alice.get("/memory?q=deploys")
    assert "alice deploys on fridays" in page.text
    assert "red key" not in page.text
    assert "after noon" not in page.text  # C1 is not among the channels she signed in with

    member = await console.with_session(ALICE, scopes=(CHANNEL,))
    page = await member.get("/memory?q=deploys")
    assert "after noon" in page.text and "red key" not in page.text


async def test_search_takes_any_text_as_words(console: ConsoleHarness) -> None:
    await note(console, ALICE, "deploys", "alice deploys on fridays")
    alice = await console.signed_in(ALICE)
    for query in ('deploys" OR (*', "NEAR(deploys", "deploys & !fridays:*", "'); DROP --"):
        page = await alice.get("/memory", params={"q": query})
        assert page.status == 200, query


async def test_an_admin_reads_every_scope_and_the_audit_records_a_private_note_read(
    console: ConsoleHarness,
) -> None:
    secret = await note(console, BOB, "bob-diet", "bob eats fish", private=True)
    await note(console, ALICE, "alice-diet", "alice is vegetarian")
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get("/memory")
    assert BOB in page.text and ALICE in page.text
    page = await admin.get(f"/notes/{secret.id}")
    assert page.status == 200 and "bob eats fish" in page.text
    [read] = await console.h.bot.services.stores.actions.fetch_recent()
    assert read.tool == "console: read a private note"
    assert read.requester == "user:test/UADMIN" and read.arguments == {"note": f"{BOB} bob-diet"}


async def test_notes_come_a_page_at_a_time(console: ConsoleHarness) -> None:
    for n in range(51):
        await note(console, ALICE, f"fact-{n}", f"fact number {n}")
    alice = await console.signed_in(ALICE)
    first = await alice.get(f"/memory/notes?scope={ALICE}")
    assert "51 notes" in first.text and "page 1 of 2" in first.text
    assert "fact-50" in first.text and "fact number 0<" not in first.text  # newest first
    second = await alice.get(f"/memory/notes?scope={ALICE}&page=2")
    assert "fact number 0<" in second.text
    page = await alice.get(f"/memory/notes?scope={ALICE}&page=99999")
    assert page.status == 404 and "There are 2 pages" in page.text
    for bad in ("0", "-1", "x", "1" * 30):
        assert (await alice.get(f"/memory/notes?scope={ALICE}&page={bad}")).status == 400


async def test_forget_is_a_change_set_of_the_person_and_can_be_undone(
    console: ConsoleHarness,
) -> None:
    mine = await note(console, ALICE, "standup", "standup is at 10")
    alice = await console.signed_in(ALICE)
    await alice.get(f"/notes/{mine.id}")
    page = await alice.post(f"/notes/{mine.id}/forget", {})
    assert page.status == 200 and re.search(r"Change #\d+: forget", page.text)
    assert "by user:test/UALICE" in page.text and "forgotten in the console" in page.text
    assert await console.h.bot.notes.fetch(Scope.parse(ALICE), "standup") is None

    page = await alice.post(page.url.removeprefix(console.base) + "/undo", {})
    assert page.status == 200
    restored = await console.h.bot.notes.fetch(Scope.parse(ALICE), "standup")
    assert restored is not None and restored.summary == "standup is at 10"
    [undo, forget, _] = await console.h.bot.notes.fetch_history(Scope.parse(ALICE), "standup")
    assert undo.actor == forget.actor == ALICE


async def test_an_edit_is_checked_as_chat_checks_a_note(console: ConsoleHarness) -> None:
    mine = await note(console, ALICE, "standup", "standup is at 10")
    alice = await console.signed_in(ALICE)
    await alice.get(f"/notes/{mine.id}")
    form = {"summary": "standup is at 11", "body": "moved", "category": "fact"}
    page = await alice.post(f"/notes/{mine.id}/edit", form)
    assert page.status == 200 and "standup is at 11" in page.text
    edited = await console.h.bot.notes.fetch(Scope.parse(ALICE), "standup")
    assert edited is not None and edited.body == "moved"

    for body, why in (("x" * 5000, "bytes"), ("key ghp_" + "a" * 36, "secret")):
        await alice.get(f"/notes/{mine.id}")
        page = await alice.post(f"/notes/{mine.id}/edit", {**form, "body": body})
        assert page.status == 400 and "not changed" in page.text, why
    kept = await console.h.bot.notes.fetch(Scope.parse(ALICE), "standup")
    assert kept is not None and kept.body == "moved"


@pytest.fixture
def bot_settings() -> dict[str, Any]:
    return {"read_only_channels": ["channel:test/C9"]}


async def test_team_notes_change_by_admins_and_read_only_channels_by_nobody(
    console: ConsoleHarness,
) -> None:
    team = await note(console, TEAM, "holidays", "the office closes in august")
    frozen = await note(console, "channel:test/C9", "rules", "be kind")
    member = await console.with_session(ALICE, scopes=(TEAM, "channel:test/C9"))
    for target in (team, frozen):
        page = await member.get(f"/notes/{target.id}")
        assert page.status == 200 and "Forget this note" not in page.text
        page = await member.post(f"/notes/{target.id}/forget", {})
        assert page.status == 403
    assert await console.h.bot.notes.fetch(Scope.parse(TEAM), "holidays") is not None

    admin = await console.signed_in("user:test/UADMIN")
    await admin.get(f"/notes/{frozen.id}")
    assert (await admin.post(f"/notes/{frozen.id}/forget", {})).status == 403
    await admin.get(f"/notes/{team.id}")
    assert (await admin.post(f"/notes/{team.id}/forget", {})).status == 200
    assert await console.h.bot.notes.fetch(Scope.parse(TEAM), "holidays") is None


async def test_an_expired_note_is_neither_counted_nor_shown(
    console: ConsoleHarness, clock: FakeClock
) -> None:
    await note(console, ALICE, "standup", "standup is at 10")
    await note(
        console, ALICE, "visitor", "a visitor comes", expires_at=clock.now + timedelta(hours=1)
    )
    clock.advance(hours=2)
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get("/memory")
    assert re.search(rf"{ALICE}</a></td><td>1<", page.text), page.text
    page = await admin.get(f"/memory/notes?scope={ALICE}")
    assert "1 note;" in page.text or "1 note." in page.text
    assert "a visitor comes" not in page.text
