"""`lorebot history import`: Slack exports (ZIP and folder), DiscordChatExporter JSON and
JSON Lines, brought into the conversations they came from, through the real CLI; what was
imported is checked the way an operator would, with `lorebot notes search --history`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.cli.history_readers import read_history
from bot.daemon.lockfile import DatabaseLock
from bot.model.ollama import OllamaEmbedder
from memory.errors import InvalidInput
from memory.sql.conversations import SqlConversationLog
from memory.sql.vectors import SqlVectorIndex
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch
from memory.sqlite.vector_tables import SqliteVectorTables
from memory.stores.conversations import LogEntry, PastMessage
from memory.transfer.history_import import ImportOptions
from tests.fakes.ollama import FakeOllama
from tests.support.history import (
    T0,
    author,
    channel,
    discord_export,
    post,
    profile,
    run,
    said,
    search,
    ts,
    user,
    zip_folder,
)

THREAD = ts(0)

SLACK_DAYS: dict[str, list[dict[str, Any]]] = {
    "general/2026-09-01.json": [
        said(
            "U01ANN",
            "Where do we keep the deploy runbook?",
            THREAD,
            thread_ts=THREAD,
            reply_count=2,
            reply_users_count=1,
            latest_reply=ts(5),
            reply_users=["U02BOB"],
            replies=[{"user": "U02BOB", "ts": ts(3)}, {"user": "U02BOB", "ts": ts(5)}],
            is_locked=False,
            subscribed=False,
        ),
        {
            "type": "message",
            "subtype": "channel_join",
            "ts": ts(1),
            "user": "U03CY",
            "text": "<@U03CY> has joined the channel",
        },
        said(
            "U02BOB",
            "In the wiki under ops/runbooks, ask <@U01ANN> for edit rights",
            ts(3),
            thread_ts=THREAD,
            parent_user_id="U01ANN",
        ),
        said(
            "U01ANN",
            "Rollback drill is moved to Thursday, see <https://wiki.example.com/drill|the plan>",
            ts(4),
            edited={"user": "U01ANN", "ts": ts(9)},
        ),
        {
            "type": "message",
            "subtype": "bot_message",
            "text": "Build #812 passed",
            "ts": ts(6),
            "bot_id": "B0CI",
            "username": "ci-bot",
            "icons": {"image_48": "https://example.com/ci.png"},
        },
        said(
            "U02BOB",
            "",
            ts(7),
            subtype="file_share",
            upload=True,
            display_as_bot=False,
            files=[
                {
                    "id": "F0PLAN",
                    "created": T0,
                    "timestamp": T0,
                    "name": "capacity-plan.pdf",
                    "title": "Capacity plan Q4",
                    "mimetype": "application/pdf",
                    "filetype": "pdf",
                    "user": "U02BOB",
                    "size": 48213,
                    "url_private": "https://files.slack.com/files-pri/T0TEAM-F0PLAN/c.pdf",
                }
            ],
        ),
        {
            "type": "message",
            "subtype": "tombstone",
            "text": "This message was deleted.",
            "user": "USLACKBOT",
            "hidden": True,
            "ts": ts(8),
            "thread_ts": ts(8),
            "reply_count": 1,
        },
    ],
    "general/2026-09-02.json": [
        said(
            "U02BOB",
            "Also the pager rotation sheet is pinned in #ops",
            ts(5),
            thread_ts=THREAD,
            parent_user_id="U01ANN",
        ),
        said(
            "U09GONE",
            "the old firewall rules live in the netops repo",
            ts(24 * 60),
            user_profile=None,
        ),
        said("U0APP", "nightly report: 3 flaky tests", ts(24 * 60 + 1), bot_id="B0APP"),
    ],
    "secret-ops/2026-09-01.json": [
        said("U01ANN", "The acquisition of Initech closes on the 30th", ts(10)),
    ],
    "D0ANNBOB/2026-09-01.json": [
        said("U01ANN", "my salary review is next week, keep it quiet", ts(11)),
        said("U02BOB", "good luck with the review", ts(12)),
    ],
}


def write_slack_export(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lists = {
        "users.json": [
            user("U01ANN", "ann", "Ann Lee"),
            user("U02BOB", "", "Bob Stone"),
            user("U03CY", "cy", "Cy Twombly"),
            user("U0APP", "", "Nightly", is_bot=True),
            user("USLACKBOT", "", "Slackbot", is_bot=True),
        ],
        "channels.json": [
            channel("C0GENERAL", "general", ["U01ANN", "U02BOB", "U03CY"]),
            channel("C0EMPTY", "empty", ["U01ANN"]),
        ],
        "groups.json": [channel("G0SECRET", "secret-ops", ["U01ANN", "U02BOB"])],
        "dms.json": [{"id": "D0ANNBOB", "created": 1700000000, "members": ["U01ANN", "U02BOB"]}],
        "mpims.json": [],
        "integration_logs.json": [],
    }
    for name, value in lists.items():
        (root / name).write_text(json.dumps(value, indent=4), encoding="utf-8")
    for name, messages in SLACK_DAYS.items():
        path = root / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(messages, indent=4), encoding="utf-8")
    return root


def found(
    capsys: pytest.CaptureFixture[str], query: str, having: str, *where: str
) -> dict[str, Any]:
    """The one hit for `query` whose text contains `having` (ranking is not tested here)."""
    hits = [h for h in search(capsys, query, *where) if having in h["content"]]
    assert len(hits) == 1, f"{query!r}: {hits}"
    return hits[0]


def contents(hits: list[dict[str, Any]]) -> list[str]:
    return [h["content"] for h in hits]


def stored(env: Path) -> int:
    import sqlite3

    with sqlite3.connect(env / "cli.db") as conn:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])


ANN_IN_GENERAL = ("--as", "user:slack/U01ANN", "--in", "channel:slack/C0GENERAL")


def test_a_slack_zip_lands_in_its_threads_with_authors_times_links_and_files(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = zip_folder(write_slack_export(env / "export"), env / "acme-export.zip")
    code, out, err = run(capsys, "history", "import", str(export), "--slack-workspace", "acme")
    assert code == 0, err
    assert out.strip() == (
        f"imported 6 new messages into 2 conversations from {export}; skipped 2 bot messages "
        "(--include-bots), 1 deleted messages, 2 private conversations (--include-private), "
        "1 system messages (--include-system)"
    )

    reply = found(capsys, "edit rights", "edit rights", *ANN_IN_GENERAL)
    assert reply["content"] == "In the wiki under ops/runbooks, ask @ann for edit rights"
    assert reply["author"] == "Bob Stone"  # no display name: the real name
    assert reply["conversation"] == f"slack/C0GENERAL/{THREAD}"  # the thread, as live
    assert reply["at"] == "2026-09-01T09:03:00.000100Z"
    assert reply["link"] == (
        f"https://acme.slack.com/archives/C0GENERAL/p{ts(3).replace('.', '')}"
        f"?thread_ts={THREAD}&cid=C0GENERAL"
    )
    edited = found(capsys, "rollback drill", "Rollback", *ANN_IN_GENERAL)
    assert edited["content"] == (
        "Rollback drill is moved to Thursday, see the plan (https://wiki.example.com/drill)"
    )
    assert edited["conversation"] == "slack/C0GENERAL/" and edited["author"] == "ann"
    upload = found(capsys, "capacity plan", "[file", *ANN_IN_GENERAL)
    assert upload["content"] == "[file: capacity-plan.pdf]"
    unknown = found(capsys, "firewall", "firewall", *ANN_IN_GENERAL)
    assert unknown["author"] == "U09GONE"  # not in users.json: the id, never nothing
    assert search(capsys, "build passed", *ANN_IN_GENERAL) == []  # bots are left out
    assert search(capsys, "joined", *ANN_IN_GENERAL) == []
    assert search(capsys, "deleted", *ANN_IN_GENERAL) == []


def test_bots_and_system_messages_come_in_when_asked(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = write_slack_export(env / "export")
    code, out, _ = run(
        capsys, "history", "import", str(export), "--include-bots", "--include-system"
    )
    assert code == 0 and "imported 9 new messages" in out and "deleted" in out
    build = found(capsys, "build passed", "Build #812", *ANN_IN_GENERAL)
    assert (build["author"], build["link"]) == ("ci-bot", "")  # no workspace given: no link
    joined = found(capsys, "joined the channel", "joined", *ANN_IN_GENERAL)
    assert joined["content"] == "@cy has joined the channel"


def test_importing_the_same_export_twice_changes_nothing(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_slack_export(env / "export")
    export = zip_folder(folder, env / "export.zip")
    code, out, _ = run(capsys, "history", "import", str(export), "--include-private")
    assert code == 0 and out.startswith("imported 11 new messages into 4 conversations")
    assert stored(env) == 11  # the DM between Ann and Bob is stored once for each of them
    nested = zip_folder(folder, env / "nested.zip", inside="Acme Slack export Sep 1 2026/")
    for again in (export, folder, nested):  # the ZIP, the export unpacked, a re-zipped one
        code, out, _ = run(capsys, "history", "import", str(again), "--include-private")
        assert code == 0
        assert out.startswith(f"imported 0 new messages into 4 conversations from {again}; ")
        assert "; 11 already there;" in out
    assert stored(env) == 11


def test_dms_and_private_channels_need_the_flag_and_stay_where_they_were(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = write_slack_export(env / "export")
    secret = ("--as", "user:slack/U01ANN", "--in", "channel:slack/G0SECRET")
    run(capsys, "history", "import", str(export))
    assert search(capsys, "salary review", "--as", "user:slack/U01ANN") == []
    assert search(capsys, "acquisition", *secret) == []

    code, out, _ = run(capsys, "history", "import", str(export), "--include-private")
    assert code == 0 and "imported 5 new messages" in out
    for person in ("U01ANN", "U02BOB"):  # each person of the DM, in their own DM
        found = search(capsys, "salary review", "--as", f"user:slack/{person}")
        assert contents(found)[0] == "my salary review is next week, keep it quiet"
        assert {(h["scope"], h["conversation"]) for h in found} == {
            (f"user:slack/{person}", "dm:slack/D0ANNBOB/")
        }
    assert search(capsys, "salary review", "--as", "user:slack/U03CY") == []
    assert search(capsys, "salary review", *ANN_IN_GENERAL) == []  # never in a channel
    assert [h["author"] for h in search(capsys, "acquisition Initech", *secret)] == ["ann"]
    other = ("--as", "user:slack/U01ANN", "--in", "channel:slack/G0OTHER")
    assert search(capsys, "acquisition Initech", *other) == []
    assert search(capsys, "acquisition Initech", *ANN_IN_GENERAL) == []
    assert search(capsys, "acquisition Initech", "--as", "user:slack/U01ANN") == []


PRIYA = author("210000000000000001", "priya", "Priya K")
MARCO = author("210000000000000002", "marco")
DEPLOYBOT = author("210000000000000003", "deploybot", is_bot=True)


def write_discord(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    guild = ("900000000000000001", "Acme")
    ops = discord_export(
        {"id": "800000000000000001", "type": "GuildTextChat", "name": "ops"},
        [
            post("700000000000000001", MARCO, "MARCO has joined.", 0, type="GuildMemberJoin"),
            post(
                "700000000000000002",
                PRIYA,
                "The VPN gateway moved to vpn-3.corp",
                1,
                timestampEdited="2026-09-03T10:05:00+02:00",
            ),
            post(
                "700000000000000003",
                MARCO,
                "thanks, updating my config",
                2,
                type="Reply",
                reference={
                    "messageId": "700000000000000002",
                    "channelId": "800000000000000001",
                    "guildId": guild[0],
                },
            ),
            post("700000000000000004", DEPLOYBOT, "deployed api v2.4.1", 3),
            post(
                "700000000000000005",
                PRIYA,
                "",
                4,
                attachments=[
                    {
                        "id": "6001",
                        "url": "https://cdn.discordapp.com/attachments/x/topology.png",
                        "fileName": "topology.png",
                        "fileSizeBytes": 1234,
                    }
                ],
            ),
        ],
        guild,
    )
    dm = discord_export(
        {"id": "800000000000000009", "type": "DirectTextChat", "name": "marco"},
        [post("700000000000000010", MARCO, "I am interviewing elsewhere, between us", 9)],
        ("0", "Direct Messages"),
    )
    (root / "Acme - Engineering - ops [800000000000000001].json").write_text(json.dumps(ops))
    (root / "Direct Messages - marco [800000000000000009].json").write_text(json.dumps(dm))
    return root


def test_a_discord_chat_exporter_folder_imports_channels_and_dms_where_they_belong(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_discord(env / "discord")
    code, out, err = run(capsys, "history", "import", str(folder), "--include-private")
    assert code == 0, err
    assert "imported 4 new messages into 2 conversations" in out
    assert "1 bot messages" in out and "1 system messages" in out
    ops = ("--as", f"user:discord/{MARCO['id']}", "--in", "channel:discord/800000000000000001")
    gateway = found(capsys, "VPN gateway", "vpn-3", *ops)
    assert gateway["author"] == "Priya K"  # the nickname
    assert gateway["at"] == "2026-09-03T08:01:00.123000Z"
    assert gateway["conversation"] == "discord/800000000000000001/"
    assert gateway["link"] == (
        "https://discord.com/channels/900000000000000001/800000000000000001/700000000000000002"
    )
    image = found(capsys, "topology", "topology", *ops)
    assert image["content"] == "[file: topology.png]"
    assert search(capsys, "deployed api", *ops) == []

    secret = found(capsys, "interviewing", "interviewing", "--as", f"user:discord/{MARCO['id']}")
    assert secret["link"].startswith("https://discord.com/channels/@me/800000000000000009/")
    assert search(capsys, "interviewing", "--as", f"user:discord/{PRIYA['id']}") == []
    assert search(capsys, "interviewing", *ops) == []


JSONL = [
    {
        "conversation": "channel:slack/C0GENERAL",
        "author": "Priya",
        "author_id": "U04PRIYA",
        "timestamp": "2026-10-02T14:03:00Z",
        "text": "the deploy freeze starts on the 14th",
        "thread": "1790000000.000100",
    },
    {
        "conversation": "slack/C0GENERAL",
        "author": "Marco",
        "timestamp": "2026-10-02T15:00:00+02:00",
        "text": "staging db is pg-stage-2",
    },
    {
        "conversation": "user:slack/U04PRIYA",
        "author": "Priya",
        "timestamp": "2026-10-03T08:00:00Z",
        "text": "remind me to renew the TLS cert",
        "id": "dm-1",
    },
]


def test_json_lines_go_to_channels_threads_and_dms(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = env / "history.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in JSONL) + "\n\n", encoding="utf-8")
    code, out, _ = run(capsys, "history", "import", str(path))
    assert code == 0
    assert "imported 2 new messages" in out and "1 private messages (--include-private)" in out
    freeze = found(capsys, "deploy freeze", "freeze", *ANN_IN_GENERAL)
    assert freeze["conversation"] == "slack/C0GENERAL/1790000000.000100"
    assert (freeze["author"], freeze["at"]) == ("Priya", "2026-10-02T14:03:00.000000Z")
    staging = found(capsys, "staging db", "staging", *ANN_IN_GENERAL)
    assert (staging["conversation"], staging["at"]) == (
        "slack/C0GENERAL/",
        "2026-10-02T13:00:00.000000Z",
    )
    code, out, _ = run(capsys, "history", "import", str(path), "--include-private")
    assert "imported 1 new messages" in out and "2 already there" in out
    cert = found(capsys, "TLS cert", "TLS", "--as", "user:slack/U04PRIYA")
    assert cert["conversation"] == "dm:slack/U04PRIYA/"
    assert search(capsys, "TLS cert", *ANN_IN_GENERAL) == []


def break_slack(root: Path) -> tuple[Path, str]:
    folder = write_slack_export(root)
    day = folder / "general/2026-09-02.json"
    messages = json.loads(day.read_text())
    messages[1]["ts"] = "yesterday"
    day.write_text(json.dumps(messages))
    return folder, f"{day}: message 2: field 'ts': String should match pattern"


def break_slack_far_future(root: Path) -> tuple[Path, str]:
    folder = write_slack_export(root)
    day = folder / "general/2026-09-02.json"
    messages = json.loads(day.read_text())
    messages[1]["ts"] = "999999999999.000100"  # past the year 9999
    day.write_text(json.dumps(messages))
    return folder, f"{day}: message 2: field 'ts': String should match pattern"


def break_discord(root: Path) -> tuple[Path, str]:
    folder = write_discord(root)
    path = next(folder.glob("Acme*.json"))
    data = json.loads(path.read_text())
    data["messages"][2]["timestamp"] = "2026-09-03T10:02:00"  # no timezone
    path.write_text(json.dumps(data))
    return folder, f"{path}: message 3: field 'timestamp': Input should have timezone info"


def break_jsonl(root: Path) -> tuple[Path, str]:
    root.mkdir()
    path = root / "history.jsonl"
    lines = [
        json.dumps(JSONL[0]),
        '{"conversation": "slack/C1", "timestamp": "2026-10-02T14:03:00Z"}',
    ]
    path.write_text("\n".join(lines))
    return path, f"{path} line 2: field 'text': Field required"


def break_jsonl_encoding(root: Path) -> tuple[Path, str]:
    root.mkdir()
    path = root / "history.jsonl"
    latin = b'{"conversation": "slack/C1", "timestamp": "2026-10-02T14:03:00Z", "text": "caf\xe9"}'
    path.write_bytes(json.dumps(JSONL[0]).encode() + b"\n" + latin)
    return path, f"{path} line 2: not valid UTF-8\n"


def break_zip(root: Path) -> tuple[Path, str]:
    folder = write_slack_export(root / "export")
    (folder / "users.json").write_text('[{"id": "U01ANN", "name": "ann"')
    export = zip_folder(folder, root / "export.zip")
    return export, f"{export}:users.json: not valid JSON: "


@pytest.mark.parametrize(
    "broken",
    [
        break_slack,
        break_slack_far_future,
        break_discord,
        break_jsonl,
        break_jsonl_encoding,
        break_zip,
    ],
)
def test_a_malformed_file_is_a_one_line_error_and_nothing_is_imported(
    env: Path, capsys: pytest.CaptureFixture[str], broken: Any
) -> None:
    earlier = env / "earlier.jsonl"
    earlier.write_text(json.dumps(JSONL[1]))
    assert run(capsys, "history", "import", str(earlier))[0] == 0
    path, expected = broken(env / "broken")
    code, out, err = run(capsys, "history", "import", str(path), "--include-private")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"lorebot: {expected}"), err
    assert stored(env) == 1  # none of the export's good files either


def test_credentials_in_imported_messages_are_redacted(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_SLACK__BOT_TOKEN", "xoxb-1111-2222-own-bot-token")
    path = env / "leak.jsonl"
    lines = [
        {
            "conversation": "slack/C0GENERAL",
            "author": "Bob",
            "timestamp": "2026-10-02T09:00:00Z",
            "text": "new db creds: password=Sup3rSecretValue99 on pg-stage-2",
        },
        {
            "conversation": "slack/C0GENERAL",
            "author": "Bob",
            "timestamp": "2026-10-02T09:01:00Z",
            "text": "oops pasted the bot token xoxb-1111-2222-own-bot-token in chat",
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    assert run(capsys, "history", "import", str(path))[0] == 0
    found = search(capsys, "creds pasted", *ANN_IN_GENERAL)
    assert sorted(contents(found)) == [
        "new db creds: password=[REDACTED] on pg-stage-2",
        "oops pasted the bot token [REDACTED] in chat",
    ]
    for path in env.glob("cli.db*"):
        data = path.read_bytes()
        assert b"Sup3rSecret" not in data and b"own-bot-token" not in data


def test_import_waits_for_a_stopped_daemon(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lock = DatabaseLock(env / "cli.db")
    lock.acquire()
    try:
        code, _, err = run(capsys, "history", "import", str(write_discord(env / "d")))
    finally:
        lock.release()
    assert code == 1 and "lorebot is running on" in err and "stop it first" in err


def test_a_path_that_holds_no_history_says_what_was_expected(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "empty").mkdir()
    code, _, err = run(capsys, "history", "import", str(env / "empty"))
    assert code == 1 and "holds no history" in err and "Slack export" in err
    code, _, err = run(capsys, "history", "import", str(env / "missing.zip"))
    assert code == 1 and err.strip().endswith("missing.zip does not exist")


async def test_imported_messages_are_queued_for_vectors_like_live_ones(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    fake_ollama.models = ["embed-test"]
    db = await SqliteDatabase.open(tmp_path / "v.db", want_vectors=True)
    embedder = OllamaEmbedder(fake_ollama.url, "embed-test", timeout_s=5.0)
    try:
        vectors = SqlVectorIndex(db, embedder, SqliteVectorTables(db))
        await vectors.prepare()
        export = read_history(write_discord(tmp_path / "d"), ImportOptions())
        log = SqlConversationLog(db, SqliteMessageSearch(db))
        assert await log.import_messages(export.messages) == 3
        assert await vectors.pending() == 3
        assert await vectors.backfill() == 3
        assert await log.import_messages(export.messages) == 0
        assert await vectors.pending() == 0
    finally:
        await db.close()
        await embedder.aclose()


def test_a_message_is_found_by_its_neighbours_in_its_own_thread_only(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As for live messages, each is indexed with the messages around it in its
    conversation: the thread's replies, never the channel's unthreaded messages."""
    run(capsys, "history", "import", str(write_slack_export(env / "export")))
    hits = contents(search(capsys, "edit rights", *ANN_IN_GENERAL))
    assert "In the wiki under ops/runbooks, ask @ann for edit rights" in hits
    assert "Also the pager rotation sheet is pinned in #ops" in hits  # the reply after it
    assert not any(text.startswith(("Rollback", "[file", "the old firewall")) for text in hits)


def past(conversation: str, scope: str, minute: int, who: str, text: str) -> PastMessage:
    when = datetime(2026, 9, 1, 9, minute, tzinfo=UTC)
    return PastMessage(
        f"slack/x/{minute}", conversation, scope, f"user:slack/{who}", who, text, when
    )


async def test_imported_messages_are_indexed_exactly_as_live_ones(tmp_path: Path) -> None:
    """The import indexes all its conversations at once; the rows must be those that
    logging the same messages live (one conversation at a time) gives."""
    general, thread, dm = "slack/C1/", "slack/C1/1788253200.000100", "dm:slack/D1/"
    messages = [
        past(general, "channel:slack/C1", 1, "ann", "is the canary healthy"),
        past(general, "channel:slack/C1", 2, "bob", "yep, error rate flat"),
        past(thread, "channel:slack/C1", 3, "ann", "who owns the pager this week"),
        past(thread, "channel:slack/C1", 4, "cy", "me until friday"),
        past(dm, "user:slack/U1", 5, "ann", "lunch at noon?"),
        past(dm, "user:slack/U1", 6, "bob", "sure"),
        past(dm, "user:slack/U2", 5, "ann", "lunch at noon?"),
        past(dm, "user:slack/U2", 6, "bob", "sure"),
    ]
    rows = []
    for name, bulk in (("imported", True), ("live", False)):
        db = await SqliteDatabase.open(tmp_path / f"{name}.db")
        try:
            log = SqlConversationLog(db, SqliteMessageSearch(db, import_batch=3))
            # A conversation that already has a message: it gets its new neighbour.
            await log.append(
                general,
                [LogEntry("user", "deploying now", "user:slack/cy", "cy")],
                scope="channel:slack/C1",
            )
            if bulk:
                assert await log.import_messages(messages) == len(messages)
            for m in [] if bulk else messages:
                entry = LogEntry("user", m.content, m.author, m.author_name)
                await log.append(m.conversation, [entry], scope=m.scope)
            async with db.conn.execute("SELECT rowid, * FROM messages_fts ORDER BY rowid") as c:
                rows.append(await c.fetchall())
        finally:
            await db.close()
    assert rows[0] == rows[1]
    assert len(rows[0]) == 1 + len(messages)


async def test_a_failure_while_reading_leaves_nothing_even_mid_write(tmp_path: Path) -> None:
    """Batches are written while the next is read: a bad file found then must still undo
    every batch, including one the writer is storing at that moment."""
    messages = [past("slack/C1/", "channel:slack/C1", n, "ann", f"note {n}") for n in range(9)]

    def reading() -> Iterator[PastMessage]:
        yield from messages
        raise InvalidInput("export.zip:general/2026-09-02.json: message 2: field 'ts': bad")

    db = await SqliteDatabase.open(tmp_path / "m.db")
    try:
        log = SqlConversationLog(db, SqliteMessageSearch(db, import_batch=2))
        with pytest.raises(InvalidInput, match="field 'ts'"):
            await log.import_messages(reading())
        assert await db.scalar("SELECT count(*) FROM messages") == 0
        assert await db.scalar("SELECT count(*) FROM messages_fts") == 0
        assert await log.import_messages(messages) == 9  # and the next one works
    finally:
        await db.close()


def test_an_enterprise_grid_export_names_people_from_org_users(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_slack_export(env / "grid")
    (folder / "users.json").rename(folder / "org_users.json")
    day = folder / "general/2026-09-03.json"
    guest = said(
        "U05DAN",
        "the offsite is in Lisbon",
        ts(3 * 24 * 60),
        user_profile=profile("dan", "Dan Brown"),
    )
    day.write_text(json.dumps([guest]))
    code, _, err = run(capsys, "history", "import", str(zip_folder(folder, env / "grid.zip")))
    assert code == 0, err
    assert found(capsys, "edit rights", "edit rights", *ANN_IN_GENERAL)["author"] == "Bob Stone"
    assert (
        found(capsys, "offsite Lisbon", "Lisbon", *ANN_IN_GENERAL)["author"] == "dan"
    )  # its profile
