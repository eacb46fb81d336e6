"""The actions, jobs, skills and settings pages: the audit filtered and kept to what the
person may see, jobs run now by admins alone, the skill catalog with what failed, and the
effective settings with secrets masked, for admins."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher

from tests.support.console import ConsoleHarness
from tests.support.polling import until

pytestmark = pytest.mark.usefixtures("on_each_engine")

ALICE = "user:test/UALICE"


async def record(
    console: ConsoleHarness, tool: str, requester: str, channel: str, **args: Any
) -> int:
    actions = console.h.bot.services.stores.actions
    action = await actions.record(
        tool,
        args,
        requester=requester,
        channel_scope=channel,
        conversation={"platform": "test", "channel_id": channel.rsplit("/", 1)[1]},
        approval="card",
    )
    await actions.start(action.id, decided_by=requester)
    await actions.finish(action.id, "ok", "done", 12)
    return action.id


async def test_the_audit_shows_redacted_arguments_and_filters(console: ConsoleHarness) -> None:
    await record(
        console, "ops__restart", ALICE, "channel:test/C1", service="web", password="hunter2"
    )
    await record(console, "ops__status", ALICE, "channel:test/C1", service="db")
    await record(console, "git__push", "user:test/UBOB", "channel:test/C2", branch="main")
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get("/actions")
    assert "3 actions" in page.text and "ops__restart" in page.text and "git__push" in page.text
    assert "hunter2" not in page.text and "[REDACTED]" in page.text

    page = await admin.get("/actions?server=ops")
    assert "2 actions" in page.text and "git__push" not in page.text
    page = await admin.get("/actions?tool=ops__status&outcome=ok&person=" + ALICE)
    assert "1 action." in page.text and "ops__status" in page.text
    page = await admin.get("/actions?server=o_")  # `_` is itself, not any character
    assert "0 actions" in page.text
    page = await admin.get("/actions?since=2026-11-03")
    assert "0 actions" in page.text
    page = await admin.get("/actions?since=2026-11-02&until=2026-11-02")
    assert "3 actions" in page.text
    assert (await admin.get("/actions?since=yesterday")).status == 400
    assert (await admin.get("/actions?page=2")).status == 404


async def test_a_member_sees_the_actions_they_asked_for_or_of_their_channels(
    console: ConsoleHarness,
) -> None:
    await record(console, "ops__restart", ALICE, "channel:test/C1", service="web")
    await record(console, "git__push", "user:test/UBOB", "channel:test/C2", branch="main")
    await record(console, "ops__status", "user:test/UBOB", "channel:test/C3", service="db")
    alice = await console.with_session(ALICE, scopes=("channel:test/C3",))
    page = await alice.get("/actions")
    assert "ops__restart" in page.text and "ops__status" in page.text
    assert "git__push" not in page.text and "2 actions" in page.text
    page = await alice.get("/actions?person=user:test/UBOB")
    assert "1 action." in page.text and "git__push" not in page.text


async def test_only_an_admin_runs_a_job_now_and_its_run_is_listed(console: ConsoleHarness) -> None:
    alice = await console.signed_in(ALICE)
    page = await alice.get("/jobs")
    assert "reflection" in page.text and "Run now" not in page.text
    assert (await alice.post("/jobs/maintenance/run", {})).status == 403

    admin = await console.signed_in("user:test/UADMIN")
    await admin.get("/jobs")
    page = await admin.post("/jobs/maintenance/run", {})
    assert page.status == 200 and "Job maintenance started" in page.text
    runs = console.h.bot.services.stores.job_runs
    await until(lambda: runs.fetch_last("maintenance"))
    [ran] = await console.h.bot.services.stores.actions.fetch_recent()
    assert ran.tool == "console: run a job now" and ran.requester == "user:test/UADMIN"
    assert ran.arguments == {"job": "maintenance", "scopes": ["all"]}
    await admin.get("/jobs")
    assert (await admin.post("/jobs/nosuchjob/run", {})).status == 404


async def test_the_skills_page_lists_the_catalog_and_what_failed(
    console: ConsoleHarness, tmp_path: Path
) -> None:
    broken = tmp_path / "user-skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no front matter here\n")
    alice = await console.signed_in(ALICE)
    page = await alice.get("/skills")
    assert "remembering" in page.text
    assert str(broken / "SKILL.md") in page.text


@pytest.fixture
def console_settings() -> dict[str, Any]:
    return {"password_hash": PasswordHasher().hash("a long enough password")}


async def test_settings_show_where_values_come_from_with_secrets_masked_to_admins(
    console: ConsoleHarness,
) -> None:
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get("/settings")
    assert "console.password_hash" in page.text and "$argon2" not in page.text
    assert "memory.max_note_bytes" in page.text and "default" in page.text
    alice = await console.signed_in(ALICE)
    assert (await alice.get("/settings")).status == 404
    assert "/settings" not in (await alice.get("/")).text


async def test_the_overview_says_how_things_stand(console: ConsoleHarness) -> None:
    admin = await console.signed_in("user:test/UADMIN")
    page = await admin.get("/")
    assert "no event since lorebot started" in page.text and "0 cards waiting" in page.text
    console.h.script_title("standup", "standup is at 10")
    await console.h.say("remember that standup is at 10")
    page = await admin.get("/")
    assert re.search(r"connected</td><td>last event \d+ s ago", page.text), page.text
    assert "1 card waiting" in page.text
    assert "reflection" in page.text and "maintenance" in page.text
    assert "reachable" in page.text and "slips, last day" in page.text
