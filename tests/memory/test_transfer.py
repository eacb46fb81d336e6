"""Import is all-or-nothing and idempotent; export is readable and re-imports exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import InvalidInput, Scope
from memory.sqlite.notes import SqliteNoteStore
from memory.transfer.note_export import export_notes
from memory.transfer.note_import import import_notes, read_source

LINES = [
    {
        "scope": "channel:slack/C1",
        "topic": "staging-db",
        "summary": "pg-stage-2",
        "body": "host pg-stage-2.internal\nport 5432\n",
        "category": "fact",
    },
    {
        "scope": "user:slack/U1",
        "topic": "editor",
        "summary": "prefers vim",
        "body": "",
        "category": "preference",
        "private": True,
    },
    {
        "scope": "team:slack/T1",
        "topic": "deploys",
        "summary": "deploys on tuesdays",
        "body": "Never on Fridays: «ünïcödé» ✅",
        "category": "convention",
        "pinned": True,
    },
]


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return path


async def test_import_is_idempotent(store: SqliteNoteStore, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "notes.jsonl", LINES)
    first = await import_notes(store, source, actor="cli")
    assert (first.created, first.updated, first.unchanged) == (3, 0, 0)
    changes = len(await store.fetch_history())
    second = await import_notes(store, source, actor="cli")
    assert (second.created, second.updated, second.unchanged) == (0, 0, 3)
    assert len(await store.fetch_history()) == changes


async def test_a_large_import_reports_its_progress_as_chunks_are_written(
    store: SqliteNoteStore, tmp_path: Path
) -> None:
    rows: list[dict[str, object]] = [
        {"scope": "channel:slack/C1", "topic": f"service-{n}", "summary": f"service {n}"}
        for n in range(2500)
    ]
    source = write_jsonl(tmp_path / "many.jsonl", rows)
    seen: list[tuple[int, int]] = []

    result = await import_notes(
        store, source, actor="cli", progress=lambda written, total: seen.append((written, total))
    )

    assert result.created == 2500
    assert seen == [(1000, 2500), (2000, 2500), (2500, 2500)]
    assert len(await store.list_notes()) == 2500


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"topic": "Not A Slug"}, r"line 2: field 'topic'"),
        ({"scope": "room:slack/C1"}, r"line 2: field 'scope'"),
        ({"category": "gossip"}, r"line 2: field 'category'"),
        ({"colour": "red"}, r"line 2: field 'colour'"),
        ({"private": "perhaps"}, r"line 2: field 'private'"),
        ({"body": "password=hunter22"}, r"line 2: .*password"),
    ],
)
async def test_one_bad_line_imports_nothing_and_names_line_and_field(
    store: SqliteNoteStore, tmp_path: Path, bad: dict[str, object], message: str
) -> None:
    rows = [LINES[0], {**LINES[1], **bad}, LINES[2]]
    source = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InvalidInput, match=message):
        await import_notes(store, source, actor="cli")
    assert await store.list_notes() == []


async def test_invalid_json_and_missing_files_are_clear(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"scope": "channel:slack/C1",\n')
    with pytest.raises(InvalidInput, match="line 1: not valid JSON"):
        read_source(tmp_path / "x.jsonl")
    with pytest.raises(InvalidInput, match="does not exist"):
        read_source(tmp_path / "missing.jsonl")


async def test_export_then_import_reproduces_the_store(
    store: SqliteNoteStore, tmp_path: Path
) -> None:
    await import_notes(store, write_jsonl(tmp_path / "n.jsonl", LINES), actor="cli")
    notes = await store.list_notes()
    assert export_notes(notes, tmp_path / "export") == 3

    index = (tmp_path / "export/channel/slack/C1/index.md").read_text()
    assert "- [staging-db](staging-db.md): pg-stage-2" in index
    topic_file = (tmp_path / "export/team/slack/T1/deploys.md").read_text()
    assert topic_file.startswith("---\n") and topic_file.endswith("«ünïcödé» ✅")

    for note in notes:
        await store.forget(note.scope, note.topic, actor="cli")
    result = await import_notes(store, tmp_path / "export", actor="cli")
    assert result.created == 3

    def content(n):  # type: ignore[no-untyped-def]
        return (n.scope, n.topic, n.summary, n.body, n.category, n.private, n.pinned, n.author)

    assert sorted(map(content, await store.list_notes())) == sorted(map(content, notes))


async def test_hand_edited_export_imports_as_an_update(
    store: SqliteNoteStore, tmp_path: Path
) -> None:
    await import_notes(store, write_jsonl(tmp_path / "n.jsonl", LINES), actor="cli")
    export_notes(await store.list_notes(), tmp_path / "export")
    path = tmp_path / "export/channel/slack/C1/staging-db.md"
    path.write_text(path.read_text().replace("port 5432", "port 6432"))
    result = await import_notes(store, tmp_path / "export", actor="cli")
    assert (result.updated, result.unchanged) == (1, 2)
    note = await store.fetch(Scope.parse("channel:slack/C1"), "staging-db")
    assert note is not None and "port 6432" in note.body
