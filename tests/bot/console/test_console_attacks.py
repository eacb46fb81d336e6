"""What a hostile or unlucky visitor of the console gets: unreadable input is a page saying
so (never a 500), chat's allowlist holds, an admin's reading of someone's private note is
always audited, a second sign-in ends the first session, and members see only their jobs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.console.guard import SESSION_COOKIE
from memory import NoteDraft, Scope
from tests.support.clock import FakeClock
from tests.support.console import ConsoleHarness

pytestmark = pytest.mark.usefixtures("on_each_engine")

ALICE = "user:test/UALICE"
BOB = "user:test/UBOB"


async def raw_request(base: str, request: bytes) -> int:
    """The status of one HTTP request sent byte for byte."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    await writer.wait_closed()
    return status


async def test_unreadable_input_is_refused_with_a_page_never_a_500(
    console: ConsoleHarness,
) -> None:
    alice = await console.signed_in(ALICE)
    await alice.get("/")
    assert (await alice.post("/signout", {}, csrf="é")).status == 403
    for path in (
        "/memory/notes?scope=user:test/UALICE&page=²",
        "/actions?page=%C2%B2",
        "/actions?until=9999-12-31",
        "/actions?since=2026-02-30",
    ):
        assert (await alice.get(path)).status == 400, path
    for request in (
        b"GET /memory HTTP/1.1\r\nHost: x\r\nCookie: lorebot_session=\xff\xfe\r\n\r\n",
        b"POST /signout HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded;"
        b" charset=bogus\r\nContent-Length: 6\r\n\r\ncsrf=x",
        b"POST /signout HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded"
        b"\r\nContent-Length: 7\r\n\r\ncsrf=\xff\xfe",
    ):
        assert await raw_request(console.base, request) in (200, 303, 400, 403), request


@pytest.fixture
def bot_settings() -> dict[str, Any]:
    return {"allowed_users": [ALICE]}


async def test_someone_chat_does_not_hear_cannot_sign_in(console: ConsoleHarness) -> None:
    browser = await console.browser()
    token = await console.link(BOB)
    await browser.get(f"/signin/link/{token}")
    page = await browser.post("/signin/link", {"token": token})
    assert page.status == 403 and "bot.allowed_users" in page.text
    assert (await browser.get("/")).url.endswith("/signin")
    await console.signed_in(ALICE)
    await console.signed_in("user:test/UADMIN")  # admins always


async def test_an_admin_reading_a_private_note_anywhere_is_audited(
    console: ConsoleHarness,
) -> None:
    notes = console.h.bot.notes
    saved = await notes.save(
        NoteDraft(Scope.parse(BOB), "salary", "bob earns a lot", private=True), actor=BOB
    )
    assert saved.change_id is not None
    admin = await console.signed_in("user:test/UADMIN")
    listing = await admin.get(f"/memory/notes?scope={BOB}")
    found = await admin.get("/memory?q=earns")
    for page in (listing, found):
        assert "salary" in page.text and "bob earns a lot" not in page.text
        assert "open it to read it" in page.text
    actions = console.h.bot.services.stores.actions
    assert await actions.fetch_recent() == []  # listing it read nothing of it
    page = await admin.get(f"/changes/{saved.change_id}")
    assert "bob earns a lot" in page.text
    [read] = await actions.fetch_recent()
    assert read.tool == "console: read a private note" and read.requester == "user:test/UADMIN"


async def test_signing_in_again_ends_the_browsers_session(console: ConsoleHarness) -> None:
    browser = await console.signed_in(ALICE)
    [first] = [c.value for c in browser.session.cookie_jar if c.key == SESSION_COOKIE]
    token = await console.link(ALICE)
    await browser.get(f"/signin/link/{token}")
    await browser.post("/signin/link", {"token": token})
    assert await console.h.bot.services.stores.console.fetch_session(first) is None


async def test_a_missing_static_file_is_not_cached(console: ConsoleHarness) -> None:
    alice = await console.signed_in(ALICE)
    async with alice.session.get(console.base + "/static/nothing.css") as response:
        assert response.status == 404 and response.headers["Cache-Control"] == "no-store"
    async with alice.session.get(console.base + "/static/console.css") as response:
        assert response.status == 200 and "public" in response.headers["Cache-Control"]


async def test_a_member_sees_the_runs_of_their_scopes_only(
    console: ConsoleHarness, clock: FakeClock
) -> None:
    runs = console.h.bot.services.stores.job_runs
    for scope, error in (("channel:test/C1", "model down"), ("channel:test/C2", "secret err")):
        await runs.claim("digest", scope, "2026-11-02")
        await runs.finish("digest", scope, "2026-11-02", "failed", error)
    member = await console.with_session(ALICE, scopes=("channel:test/C1",))
    page = await member.get("/jobs")
    assert "channel:test/C1" in page.text and "channel:test/C2" not in page.text
    assert "model down" not in page.text  # errors are for admins
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get("/jobs")
    assert "channel:test/C2" in page.text and "secret err" in page.text


async def test_a_card_that_expired_unseen_is_not_decided(
    console: ConsoleHarness, clock: FakeClock
) -> None:
    console.h.script_title("standup", "standup is at 10")
    await console.h.say("remember that standup is at 10")
    alice = await console.signed_in(ALICE)
    cards = await alice.get("/cards")
    clock.advance(hours=25)  # past the card's time, before the job marks it expired
    import re

    shown = re.search(r'name="hash" value="([0-9a-f]+)"', cards.text)
    assert shown
    session = await console.with_session(ALICE)
    page = await session.post(
        "/cards/1/decide",
        {"decision": "approve", "hash": shown.group(1)},
        csrf=(await session.get("/")).csrf,
    )
    assert page.status == 409
    assert await console.h.bot.notes.fetch(Scope.parse("channel:test/C1"), "standup") is None


async def test_an_admin_sees_nothing_of_a_card_asked_for_in_a_dm(console: ConsoleHarness) -> None:
    console.h.script_title("allergy", "alice is allergic to nuts")
    await console.h.say("remember that I am allergic to nuts", dm=True)
    admin = await console.signed_in("user:test/UADMIN")
    for path in ("/cards", "/cards/1"):
        page = await admin.get(path)
        assert "allergic" not in page.text and "shown to the requester alone" in page.text
    alice = await console.signed_in(ALICE)
    assert "allergic to nuts" in (await alice.get("/cards")).text


async def test_a_member_undoes_only_their_own_changes(console: ConsoleHarness) -> None:
    notes = console.h.bot.notes
    channel = Scope.parse("channel:test/C1")
    await notes.save(NoteDraft(channel, "rules", "be kind"), actor="user:test/UADMIN")
    [admins] = await notes.fetch_history(channel, "rules")
    member = await console.with_session(ALICE, scopes=("channel:test/C1",))
    page = await member.get(f"/changes/{admins.id}")
    assert page.status == 200 and "Undo this change" not in page.text
    assert (await member.post(f"/changes/{admins.id}/undo", {})).status == 403
    assert await notes.fetch(channel, "rules") is not None

    await notes.save(NoteDraft(channel, "lunch", "lunch at noon"), actor=ALICE)
    [hers] = await notes.fetch_history(channel, "lunch")
    await member.get(f"/changes/{hers.id}")
    page = await member.post(f"/changes/{hers.id}/undo", {})
    assert page.status == 200 and "Undo this change" not in page.text  # an undo stays
    assert await notes.fetch(channel, "lunch") is None


async def test_an_edit_keeps_a_note_private_and_refuses_a_stale_form(
    console: ConsoleHarness,
) -> None:
    notes = console.h.bot.notes
    saved = await notes.save(
        NoteDraft(Scope.parse(BOB), "salary", "bob earns a lot", private=True), actor=BOB
    )
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get(f"/notes/{saved.note.id}")
    assert 'name="private"' not in page.text  # whose notes they are decides that
    form = {"summary": "bob earns plenty", "body": "", "category": "fact"}
    assert (await admin.post(f"/notes/{saved.note.id}/edit", form)).status == 200
    edited = await notes.fetch(Scope.parse(BOB), "salary")
    assert edited is not None and edited.private and edited.summary == "bob earns plenty"

    stale = await admin.get(f"/notes/{saved.note.id}")
    await notes.save(
        NoteDraft(Scope.parse(BOB), "salary", "bob earns less", private=True), actor=BOB
    )
    page = await admin.post(f"/notes/{saved.note.id}/forget", {}, csrf=stale.csrf)
    assert page.status == 409 and "changed since you opened it" in page.text
    assert await notes.fetch(Scope.parse(BOB), "salary") is not None


async def test_run_now_runs_the_period_due_once(console: ConsoleHarness) -> None:
    admin = await console.signed_in("user:test/UADMIN")
    await admin.get("/jobs")
    await admin.post("/jobs/maintenance/run", {})
    actions = console.h.bot.services.stores.actions

    async def finished() -> bool:
        return any(a.outcome != "running" for a in await actions.fetch_recent())

    from tests.support.polling import until

    await until(finished)
    runner = console.h.bot.jobs
    job = runner.jobs["maintenance"]
    [(scope, cron)] = job.schedules()
    [again] = await runner.fire(job, scope, cron)  # the schedule, at the same time
    assert again.status == "already-done"
    [ran] = await actions.fetch_recent()
    assert ran.outcome == "ok" and "succeeded" in ran.output


async def test_sign_in_attempts_through_a_local_proxy_count_per_client(
    console: ConsoleHarness,
) -> None:
    browser = await console.browser()
    csrf = (await browser.get("/signin/link/nope")).csrf

    async def attempt(client: str) -> int:
        async with browser.session.post(
            console.base + "/signin/link",
            data={"token": "nope", "csrf": csrf},
            headers={"X-Forwarded-For": f"203.0.113.9, {client}"},
        ) as response:
            return response.status

    assert [await attempt("198.51.100.1") for _ in range(11)][-1] == 429
    assert await attempt("198.51.100.2") == 404  # another person behind the same proxy
