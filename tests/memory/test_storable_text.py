"""Text no engine can keep, kept the same on both (`memory.policy.storable`, docs/memory.md): a
NUL character and a lone surrogate become U+FFFD in every text parameter and in the JSON
the stores write, so a note, its change sets, a card's payload, an action and a message
read back alike on SQLite and PostgreSQL, and a change set can still be reverted."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from memory import NoteDraft, Scope
from memory.policy.storable import storable_json, storable_json_text, storable_text
from memory.policy.visibility import Visibility
from memory.stores.conversations import LogEntry
from tests.support.paths import ROOT

C1 = Scope.parse("channel:slack/C1")
ACTOR = "user:slack/UALICE"


def test_a_nul_and_a_lone_surrogate_become_u_fffd_and_a_pair_its_character() -> None:
    assert storable_text("a\x00b\x00") == "a\ufffdb\ufffd"
    assert storable_text("cut \ud83d emoji") == "cut \ufffd emoji"
    assert storable_text("\ud83d\ude00") == "\U0001f600"
    plain = "nothing to change é"
    assert storable_text(plain) is plain


def test_json_holds_no_escape_of_a_nul_and_keeps_a_backslash_u_as_written() -> None:
    value = {"k\x00": ["a\x00", "\\u0000 as typed", "\ud800"], "n": 1}
    for options in ({}, {"ensure_ascii": False}, {"sort_keys": True, "compact": True}):
        text = storable_json(value, **options)  # type: ignore[arg-type]
        assert json.loads(text) == {"k\ufffd": ["a\ufffd", "\\u0000 as typed", "\ufffd"], "n": 1}
    assert storable_json({"a": 1}, compact=True) == '{"a":1}'
    assert storable_json({"a": "é"}) == json.dumps({"a": "é"})
    earlier = json.dumps({"k": "a\x00", "typed": "\\u0000", "odd": "\\\x00"})
    assert json.loads(storable_json_text(earlier)) == {
        "k": "a\ufffd",
        "typed": "\\u0000",
        "odd": "\\\ufffd",
    }


def test_the_stores_write_json_through_the_rule_only() -> None:
    """`json.dumps` writes a NUL as `\\u0000`, which PostgreSQL's jsonb refuses."""
    found = [
        str(path.relative_to(ROOT))
        for engine in ("sqlite", "postgres")
        for path in sorted((ROOT / "memory" / engine).glob("*.py"))
        if "json.dumps(" in path.read_text(encoding="utf-8")
        or "JSONEncoder(" in path.read_text(encoding="utf-8")
    ]
    assert found == [], f"write JSON with memory.policy.storable.storable_json: {found}"


async def test_a_note_with_nul_is_kept_as_u_fffd_saved_again_unchanged_and_undone(
    engine_stores: Any,
) -> None:
    notes = engine_stores.notes
    draft = NoteDraft(C1, "build-id", "build id a\x00b", "the id is a\x00b", author="ci\x00")
    saved = await notes.save(draft, actor=ACTOR)
    note = await notes.fetch(C1, "build-id")
    assert (note.summary, note.body, note.author) == (
        "build id a\ufffdb",
        "the id is a\ufffdb",
        "ci\ufffd",
    )
    assert saved.note.body == "the id is a\ufffdb"
    [change] = await notes.fetch_history(C1, "build-id")
    assert change.after is not None and change.after["body"] == "the id is a\ufffdb"

    again = await notes.save(draft, actor=ACTOR)
    assert again.change_id is None  # unchanged: no second change set
    # Undone in a channel: PostgreSQL reads the change set's JSON as jsonb.
    undone = await notes.undo(ACTOR, visibility=Visibility((), (C1,)))
    assert undone.before is not None and undone.before["summary"] == "build id a\ufffdb"
    assert await notes.fetch(C1, "build-id") is None


async def test_a_message_with_nul_or_a_lone_surrogate_reads_back_with_u_fffd(
    engine_stores: Any,
) -> None:
    entries = [
        LogEntry("user", "fields\x00split", ACTOR, "Ali\x00ce"),
        LogEntry("assistant", "a cut \ud83d emoji"),
    ]
    await engine_stores.log.append("slack/C1/", entries, scope=str(C1))
    history = (await engine_stores.log.fetch_history("slack/C1/")).entries
    assert [e.content for e in history] == ["fields\ufffdsplit", "a cut \ufffd emoji"]


async def test_a_cards_payload_and_an_actions_output_with_nul_read_back_with_u_fffd(
    engine_stores: Any,
) -> None:
    proposal = await engine_stores.proposals.create(
        "note",
        requester=ACTOR,
        platform="slack",
        conversation={"channel_id": "C1"},
        payload={"body": "a\x00b", "k\x00": 1},
        ttl=timedelta(hours=1),
    )
    fetched = await engine_stores.proposals.fetch(proposal.id)
    assert fetched.payload == {"body": "a\ufffdb", "k\ufffd": 1}

    actions = engine_stores.actions
    action = await actions.record(
        "ops__cmdline",
        {"pid": "1\x00"},
        requester=ACTOR,
        channel_scope=str(C1),
        conversation={"channel_id": "C1"},
        approval="allow list",
    )
    await actions.start(action.id)
    done = await actions.finish(action.id, "ok", "python3\x00-m\x00ops", 5)
    assert (done.outcome, done.output) == ("ok", "python3\ufffd-m\ufffdops")
    assert done.arguments == {"pid": "1\ufffd"}
