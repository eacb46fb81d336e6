"""Each proposal kind is one object, found by the name its proposals store, and its payload
reads back as the kind stored it, the shapes of earlier lorebots included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.approvals.kinds.action import ACTION, McpCall, ScriptRun
from bot.approvals.kinds.registry import KINDS, OtherKind, get_kind
from bot.approvals.kinds.skill_create import SkillCreate
from bot.approvals.kinds.skill_load import SkillLoad
from memory.stores.proposals import IN_TRANSACTION, NoteForget, NoteSave, Proposal
from memory.types import Category, NoteDraft, Scope

CHANNEL = Scope.parse("channel:slack/C1")
# An MCP tool call's payload as an action card stores it.
MCP_CALL: dict[str, Any] = {
    "server": "ops",
    "server_id": "srv-1",
    "tool": "restart",
    "arguments": {},
    "held": "",
    "hash": "9f",
    "action_id": 3,
    "approvers": "requester",
}


def proposal(kind: str, payload: dict[str, Any], status: str = "approved") -> Proposal:
    made = datetime(2026, 1, 5, 9, tzinfo=UTC)
    return Proposal(
        id=7,
        kind=kind,
        status=status,
        requester="user:slack/UALICE",
        platform="slack",
        conversation={"platform": "slack", "channel_id": "C1"},
        card_message_id="1.2",
        payload=payload,
        created_at=made,
        expires_at=made + timedelta(hours=24),
        decided_by="user:slack/UALICE",
        outcome="",
    )


def test_every_kind_is_found_by_the_name_its_proposals_store() -> None:
    assert set(KINDS) == {"note_save", "note_forget", "skill_load", "skill_create", "action"}
    assert all(get_kind(name) is kind and kind.name == name for name, kind in KINDS.items())
    assert {name for name, kind in KINDS.items() if kind.writes_memory} == {
        "note_save",
        "note_forget",
        "skill_create",
    }
    # The note kinds change memory in the decision's own transaction.
    assert set(IN_TRANSACTION) == {"note_save", "note_forget"}


def test_a_kind_lorebot_has_no_definition_of_closes_as_any_card() -> None:
    kind = get_kind("ask_question")
    assert kind == OtherKind("ask_question")
    assert (kind.label, kind.resumes_on) == ("ask question", frozenset({"approved", "rejected"}))
    asked = proposal("ask_question", {"question": "restart?", "turn": {}, "text": "…"})
    assert kind.captured(asked) == {"question": "restart?"}
    assert kind.resume_message(asked) == "proposal #7 was approved"


def test_only_an_action_resumes_its_turn_after_it_expired() -> None:
    assert [name for name, kind in KINDS.items() if "expired" in kind.resumes_on] == ["action"]


def test_a_note_save_reads_back_and_an_older_card_without_the_notes_state_is_unchecked() -> None:
    draft = NoteDraft(CHANNEL, "staging-db", "staging is db-2", "on giraffe", Category.DECISION)
    stored = NoteSave(draft, "3f2a").to_json()
    assert list(stored) == [
        "scope",
        "topic",
        "summary",
        "body",
        "category",
        "private",
        "source",
        "author",
        "expect",
    ]
    assert NoteSave.from_json(stored) == NoteSave(draft, "3f2a")
    older = {k: v for k, v in stored.items() if k != "expect"}
    assert NoteSave.from_json(older) == NoteSave(draft, None, recorded=False)
    assert NoteSave.from_json(older).to_json() == older


def test_a_note_forget_reads_back_as_stored() -> None:
    stored = {"scope": "channel:slack/C1", "topic": "staging-db", "expect": None}
    assert NoteForget.from_json(stored) == NoteForget(CHANNEL, "staging-db", None)
    assert NoteForget.from_json(stored).to_json() == stored


def test_skill_payloads_read_back_as_stored() -> None:
    load = {"name": "triage", "sha256": "ab12", "path": "/skills/triage/SKILL.md"}
    assert SkillLoad.from_json(load).to_json() == load
    create = {"name": "triage", "text": "---\nname: triage\n---\n"}
    assert SkillCreate.from_json(create).to_json() == create


def test_an_action_is_an_mcp_call_or_a_script_run_as_its_payload_says() -> None:
    call = {
        "server": "ops",
        "server_id": "srv-1",
        "tool": "restart",
        "arguments": {"service": "web"},
        "held": "",
        "hash": "9f",
        "action_id": 3,
        "approvers": "admins",
    }
    assert ACTION.payload(proposal("action", call)) == McpCall.from_json(call)
    assert McpCall.from_json(call).to_json() == call
    older = {k: v for k, v in call.items() if k != "server_id"}
    assert McpCall.from_json(older).server_id is None
    run = {
        "tool": "scripts/report.py",
        "server": "skill triage",
        "arguments": {"skill": "triage", "script": "scripts/report.py", "args": ["--all"]},
        "sha256": "aa",
        "files_sha256": "bb",
        "files": 4,
        "mode": "sandboxed",
        "hash": "cc",
        "held": "",
        "action_id": 4,
    }
    assert ACTION.payload(proposal("action", run)) == ScriptRun.from_json(run)
    assert ScriptRun.from_json(run).to_json() == run
    bound_only_the_script = {k: v for k, v in run.items() if k not in ("files_sha256", "files")}
    assert ScriptRun.from_json(bound_only_the_script).files_sha256 is None


def test_an_admins_always_allows_a_servers_tool_but_never_a_script() -> None:
    call = MCP_CALL
    allowed = ACTION.allowance(call)
    assert allowed is not None and (allowed.tool, allowed.server_id) == ("ops__restart", "srv-1")
    assert ACTION.allowance({**call, "sha256": "aa"}) is None
    assert not get_kind("note_save").always_approvable() and ACTION.always_approvable()


def test_the_model_is_told_a_declined_or_expired_action_was_not_run() -> None:
    call = MCP_CALL
    declined = ACTION.resume_message(proposal("action", call, "rejected"))
    expired = ACTION.resume_message(proposal("action", call, "expired"))
    assert declined == McpCall.declined and expired == McpCall.expired
    assert "not run" in declined and "in time" in expired


def test_no_kind_captures_the_waiting_turn_or_a_skills_whole_text() -> None:
    payload = {"topic": "standup", "name": "deploy", "turn": {"messages": ["hi"]}, "text": "…"}
    for kind in (*KINDS.values(), OtherKind("question")):
        captured = kind.captured(proposal(kind.name, payload))
        if captured is not None:  # an action is captured when it has run, not decided
            assert "turn" not in captured and "text" not in captured, kind.name
            assert captured.get("topic") == "standup", kind.name
