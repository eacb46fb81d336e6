"""Credentials pasted into chat never reach the message history, its search index, notes,
captured actions or the logs; what is stored still says what the message was about."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from adapters.base import APPROVE
from bot.daemon.logs import configure_logging
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

BOT_TOKEN = "xoxb-2048-1234567890-AbCdEfGhIjKlMnOp"
SIGNING_SECRET = "8f14e45fceea167a5a36dedd4bea2543"  # looks like nothing in particular


async def stored_texts(h: Harness) -> list[str]:
    """Every message text as stored: the history table and its search index."""
    texts: list[str] = []
    for table in ("messages", "messages_fts"):
        async with h.bot.db.conn.execute(f"SELECT content FROM {table}") as cursor:
            texts += [row[0] for row in await cursor.fetchall()]
    return texts


def tool_results(h: Harness) -> list[str]:
    return [m["content"] for m in h.ollama.chat_requests[-1]["messages"] if m["role"] == "tool"]


async def test_a_token_pasted_in_chat_is_stored_and_found_redacted(harness: Harness) -> None:
    harness.ollama.reply("Please rotate that token now.")
    await harness.say("my token is xoxb-123\u200b456-7890123456-AbCdEfGhIjKl, is it ok?")
    stored = await stored_texts(harness)
    assert stored and not any("AbCdEfGhIjKl" in text for text in stored)
    assert "my token is [REDACTED], is it ok?" in stored

    harness.ollama.tool_call("memory_search", {"query": "token"})
    harness.ollama.reply("You pasted a Slack token earlier; it was redacted.")
    await harness.say("what token did I paste earlier?")
    [found] = tool_results(harness)
    assert "my token is [REDACTED]" in found and "AbCdEfGhIjKl" not in found


async def test_json_and_url_credentials_in_chat_are_redacted_but_keep_their_shape(
    harness: Harness,
) -> None:
    harness.ollama.reply("Got it.")
    await harness.say('staging is postgres://admin:S3cret@db/app and {"password": "hunter2"}')
    stored = await stored_texts(harness)
    assert not any("S3cret" in text or "hunter2" in text for text in stored)
    assert 'staging is postgres://admin:[REDACTED]@db/app and {"password": "[REDACTED]"}' in (
        stored
    )


async def test_the_bots_own_configured_secrets_said_in_chat_are_not_stored(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        slack={"bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET},
    )
    try:
        fake_ollama.reply(f"Never share {SIGNING_SECRET} here.")
        await h.say(f"is {BOT_TOKEN} our token, and {SIGNING_SECRET} the signing secret?")
        stored = await stored_texts(h)
        assert len(stored) == 4  # the question and the answer, in the table and the index
        assert not any(BOT_TOKEN in text or SIGNING_SECRET in text for text in stored)
        assert "is [REDACTED] our token, and [REDACTED] the signing secret?" in stored
        assert "Never share [REDACTED] here." in stored
    finally:
        await h.bot.stop()


async def test_a_note_with_a_secret_in_its_summary_is_refused(harness: Harness) -> None:
    harness.ollama.tool_call(
        "propose_note",
        {
            "topic": "staging-login",
            "summary": 'staging login {"password": "hunter2"}',
            "body": "ask #ops for access",
        },
    )
    harness.ollama.reply("I cannot keep passwords in notes.")
    await harness.say("keep a note of the staging login")
    assert harness.adapter.cards == []
    [result] = tool_results(harness)
    assert "not saved: the note contains a password or secret assignment" in result
    assert await harness.bot.notes.list_notes() == []


async def test_remembering_a_connection_string_keeps_it_without_its_password(
    harness: Harness,
) -> None:
    """The message is redacted as it comes in, so the note proposed is the URL without its
    password, and neither the model asked for a title nor the card ever had it."""
    harness.script_title("staging-db", "the staging database URL")
    await harness.say("remember that staging is mongodb+srv://app:p%40ss@cluster0.example.net/db")
    [card] = harness.adapter.cards
    assert "mongodb+srv://app:[REDACTED]@cluster0.example.net/db" in card.text
    await harness.react(card, APPROVE)
    [note] = await harness.bot.notes.list_notes()
    assert "mongodb+srv://app:[REDACTED]@cluster0.example.net/db" in note.body
    assert "p%40ss" not in json.dumps(harness.ollama.chat_requests) + card.text + note.body


async def test_captured_actions_are_stored_without_credentials(harness: Harness) -> None:
    await harness.bot.events.capture(
        "deploy_service",
        {
            "name": "api",
            "password": "hunter2",
            "dsn": "postgres://admin:S3cret@db/app",
            "config": '{"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
        },
        outcome='deployed with {"api_key": "abc123def456"}',
        conversation={},
        channel_scope=None,
        person="user:test/UALICE",
    )
    [event] = await harness.bot.events.fetch_since(harness.clock.now - timedelta(days=1))
    stored = json.dumps(event.arguments) + event.outcome
    for secret in ("hunter2", "S3cret", "wJalrXUtnFEMI", "abc123def456"):
        assert secret not in stored
    assert event.arguments["name"] == "api" and event.arguments["password"] == "[REDACTED]"
    assert event.arguments["dsn"] == "postgres://admin:[REDACTED]@db/app"


async def test_debug_logs_hold_no_credentials(
    harness: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(logging.DEBUG, "text", harness.bot.settings.secrets())
    try:
        harness.ollama.reply(
            "Done.", thinking='they sent {"password": "hunter2"} and redis://:S3cret@cache:6379'
        )
        await harness.say("connect me")
        err = capsys.readouterr().err
        assert "model thinking" in err
        assert "hunter2" not in err and "S3cret" not in err
        assert '{"password": "[REDACTED]"} and redis://:[REDACTED]@cache:6379' in err
    finally:
        configure_logging(logging.WARNING, "text", [])
