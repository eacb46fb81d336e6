"""`--json` on the commands that list, as a script reads them: one parseable document,
stable field names, plain values, UTC times ending in Z, and `[]` when there is nothing."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine

from adapters.base import ALWAYS
from bot.cli.common import cli_actor
from bot.cli.main import main
from tests.fakes.mcp_ops import make_server
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import start_harness

NOWHERE = "http://127.0.0.1:9"  # nothing listens there


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out = run(capsys, *argv, "--json")
    assert code == 0, out
    return json.loads(out)


def utc(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text)


def strings(value: Any) -> Iterator[str]:
    """Every string value in a JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_notes_list_gives_each_note_with_its_flags(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(
        capsys,
        "notes",
        "add",
        "channel:slack/C1",
        "staging-db",
        "staging DB is pg-stage-2",
        "--category",
        "convention",
        "--pinned",
    )
    run(capsys, "notes", "add", "user:slack/U1", "editor", "prefers vim", "--private")

    notes = {n["topic"]: n for n in run_json(capsys, "notes", "list")}

    assert set(notes) == {"staging-db", "editor"}
    staging, editor = notes["staging-db"], notes["editor"]
    assert staging["scope"] == "channel:slack/C1"
    assert staging["summary"] == "staging DB is pg-stage-2"
    assert (staging["category"], staging["pinned"], staging["private"]) == (
        "convention",
        True,
        False,
    )
    assert (editor["private"], editor["pinned"]) == (True, False)
    assert editor["author"] == cli_actor() and editor["source"] == "cli"
    assert editor["in_index"] is True and editor["expires_at"] is None
    assert utc(editor["updated_at"]) >= utc(editor["created_at"])
    assert isinstance(editor["id"], int)

    only = run_json(capsys, "notes", "list", "--scope", "user:slack/U1")
    assert [n["topic"] for n in only] == ["editor"]
    # The text form is unchanged.
    code, out = run(capsys, "notes", "list")
    assert code == 0 and "  - editor: prefers vim  [fact, private]" in out


def test_empty_listings_are_an_empty_array(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "staging DB is pg-stage-2")
    nowhere = ("--scope", "channel:slack/C9")

    assert run_json(capsys, "notes", "list", *nowhere) == []
    assert run_json(capsys, "notes", "history", *nowhere) == []
    assert run_json(capsys, "proposals", "list") == []
    assert run_json(capsys, "actions", "allowances") == []
    assert run(capsys, "notes", "list", *nowhere)[1] == "no notes in channel:slack/C9\n"


def test_notes_history_gives_each_change_with_the_summaries_before_and_after(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "staging DB is pg-stage-1")
    run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "staging DB is pg-stage-2")
    run(capsys, "notes", "forget", "channel:slack/C1", "staging-db")
    run(capsys, "notes", "revert", "3")

    changes = run_json(capsys, "notes", "history")

    assert [(c["id"], c["action"]) for c in changes] == [
        (4, "revert"),
        (3, "forget"),
        (2, "update"),
        (1, "create"),
    ]
    revert, forget, update, create = changes
    assert (update["summary_before"], update["summary_after"]) == (
        "staging DB is pg-stage-1",
        "staging DB is pg-stage-2",
    )
    assert (create["summary_before"], create["summary_after"]) == (None, "staging DB is pg-stage-1")
    assert forget["summary_after"] is None and forget["reverted_by"] == 4
    assert revert["summary_after"] == "staging DB is pg-stage-2"
    assert {(c["scope"], c["topic"], c["by"]) for c in changes} == {
        ("channel:slack/C1", "staging-db", cli_actor())
    }
    assert utc(revert["at"]) >= utc(create["at"])
    assert run_json(capsys, "notes", "history", "-n", "1")[0]["id"] == 4


def test_proposals_list_shows_status_decider_and_card(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", NOWHERE)
    monkeypatch.setattr("sys.stdin", io.StringIO("remember that A is 1\nremember that B is 2\n"))
    assert main(["chat", "--user", "bob"]) == 0
    assert main(["proposals", "approve", "1"]) == 0
    capsys.readouterr()

    pending = run_json(capsys, "proposals", "list")
    every = {p["id"]: p for p in run_json(capsys, "proposals", "list", "--all")}

    assert [p["id"] for p in pending] == [2]
    decided, waiting = every[1], every[2]
    assert (decided["status"], decided["decided_by"], decided["outcome"]) == (
        "approved",
        cli_actor(),
        "created",
    )
    assert (waiting["status"], waiting["decided_by"], waiting["outcome"]) == ("pending", None, "")
    assert decided["kind"] == "note_save" and decided["requester"] == "user:console/bob"
    assert decided["scope"] == "user:console/bob" and decided["topic"]
    created, expires = utc(decided["created_at"]), utc(decided["expires_at"])
    assert (expires - created).total_seconds() == 24 * 3600
    assert created <= utc(decided["decided_at"]) < expires and waiting["decided_at"] is None
    card = decided["card"]
    assert (card["platform"], card["channel_id"], card["thread_id"]) == ("console", "dm-bob", None)
    assert card["message_id"] and card["message_id"] != waiting["card"]["message_id"]


BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("now", "next_digest"),
    [
        (datetime(2026, 12, 4, 19, 30, tzinfo=BERLIN), datetime(2026, 12, 7, 9, tzinfo=BERLIN)),
        (datetime(2026, 12, 6, 10, 0, tzinfo=BERLIN), datetime(2026, 12, 7, 9, tzinfo=BERLIN)),
        # Friday before the clocks go back on Sunday the 25th: Monday 09:00 is 08:00Z.
        (datetime(2026, 10, 23, 23, 0, tzinfo=BERLIN), datetime(2026, 10, 26, 9, tzinfo=BERLIN)),
    ],
    ids=["friday-evening", "sunday", "across-dst"],
)
def test_jobs_list_gives_each_schedule_with_next_and_last_run(
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    now: datetime,
    next_digest: datetime,
) -> None:
    monkeypatch.setenv("LOREBOT_JOBS__TIMEZONE", "Europe/Berlin")
    monkeypatch.setenv(
        "LOREBOT_JOBS__DIGESTS", '[{"channel": "channel:slack/C1", "cron": "0 9 * * 1-5"}]'
    )
    with time_machine.travel(now, tick=False):
        run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "staging DB is pg-stage-2")
        assert main(["jobs", "run", "maintenance"]) == 0
        capsys.readouterr()

        schedules = {s["job"]: s for s in run_json(capsys, "jobs", "list")}
        lines = run(capsys, "jobs", "list")[1]

    assert set(schedules) == {"reflection", "patterns", "digest", "maintenance"}
    digest = schedules["digest"]
    assert digest["scope"] == "channel:slack/C1"
    assert (digest["cron"], digest["days"]) == ("0 9 * * 1-5", "Monday to Friday")
    assert digest["timezone"] == "Europe/Berlin"
    assert utc(digest["next_run"]) == next_digest
    assert digest["last_run"] is None
    assert "[0 9 * * 1-5 Europe/Berlin, Monday to Friday]" in lines
    assert schedules["reflection"]["days"] == "every day"
    maintenance = schedules["maintenance"]
    assert maintenance["scope"] == "all"
    last = maintenance["last_run"]
    assert last["status"] == "succeeded" and last["period"].endswith("Z")
    assert "expired 0 proposals" in last["detail"]
    assert utc(last["at"]) >= datetime.strptime(last["period"], "%Y-%m-%dT%H:%MZ").replace(
        tzinfo=ZoneInfo("UTC")
    )


def test_jobs_list_without_digests_is_still_only_json(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "staging DB is pg-stage-2")
    schedules = run_json(capsys, "jobs", "list")  # no "digest: no channels configured" line
    assert [s["job"] for s in schedules] == ["reflection", "patterns", "maintenance"]
    assert all(s["timezone"] == "UTC" and utc(s["next_run"]) for s in schedules)
    assert "digest: no channels configured" in run(capsys, "jobs", "list")[1]


def test_doctor_reports_a_failing_check_and_exits_1(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", NOWHERE)

    code, out = run(capsys, "doctor", "--json")

    assert code == 1
    report = json.loads(out)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is False
    assert checks["model"]["ok"] is False
    assert checks["model"]["detail"] == f"unreachable at {NOWHERE} (cannot connect)"
    assert "ollama serve" in checks["model"]["fix"]
    assert checks["config"] == {
        "name": "config",
        "ok": True,
        "detail": "loaded from the environment and defaults",
        "fix": None,
    }
    assert report["total"] == len(report["checks"])
    assert report["passed"] == sum(c["ok"] for c in report["checks"]) == report["total"] - 1


def test_doctor_with_settings_that_do_not_load_reports_them_as_config_checks(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_JOBS__TIMEZONE", "Mars/Olympus")

    code, out = run(capsys, "doctor", "--json")

    assert code == 1
    report = json.loads(out)
    assert (report["ok"], report["passed"], report["total"]) == (False, 0, 1)
    [check] = report["checks"]
    assert (check["name"], check["ok"]) == ("config", False)
    assert check["detail"].startswith("jobs.timezone (LOREBOT_JOBS__TIMEZONE in the environment)")


def test_json_values_carry_no_markdown_the_text_form_shows(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", NOWHERE)
    text = run(capsys, "doctor")[1]
    assert "✗ model" in text and "(`ollama serve`)" in text
    assert "none configured (`lorebot chat` still works)" in text

    report = json.loads(run(capsys, "doctor", "--json")[1])

    values = list(strings(report))
    assert not [v for v in values if "`" in v or "*" in v or "✓" in v or "✗" in v]
    platforms = [c for c in report["checks"] if c["name"] == "platforms"]
    assert platforms[0]["detail"] == "none configured (lorebot chat still works)"


async def test_actions_allowances_gives_each_allowance(
    env: Path,
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, _ = make_server()
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        mcp_targets={"ops": server},
        mcp={"servers": [{"name": "ops", "command": "in-process"}]},
    )
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(h.bot.settings.database.path))
    try:
        assert await h.bot.mcp.servers["ops"].wait_connected(5)
        h.ollama.tool_call("ops__restart", {"service": "web"})
        await h.say("restart web")
        h.ollama.reply("Restarted.")
        await h.react(h.adapter.cards[-1], ALWAYS, user="UADMIN")
        assert await asyncio.to_thread(main, ["actions", "allowances", "--json"]) == 0
    finally:
        await h.bot.stop()

    [allowance] = json.loads(capsys.readouterr().out)
    assert allowance == {
        "id": allowance["id"],
        "tool": "ops__restart",
        "channel": "channel:test/C1",
        "granted_by": "user:test/UADMIN",
        "created_at": "2026-11-02T09:00:00Z",
    }
