"""Approve / Decline on Slack cards: Block Kit out, `block_actions` in over Socket Mode and
signed over HTTP, through slack-bolt, deciding by a reaction's rules."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.base import Button
from adapters.slack.buttons import SECTION_CHARS, STOPPING, card_blocks
from bot.approvals.clicks import CHANGED, NOT_A_CARD
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import Body, FakeSlack, Post, post_form, sign
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.clock import FakeClock
from tests.support.slack import SECRET, Running, start_bot

HTTP = {"app_token": None, "signing_secret": SECRET, "listen": "127.0.0.1:0"}


@pytest.fixture(params=["socket", "http"])
async def running(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    clock: FakeClock,
) -> AsyncIterator[Running]:
    options: dict[str, Any] = HTTP if request.param == "http" else {}
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock, **options)
    try:
        yield run
    finally:
        await run.bot.stop()


def events_url(run: Running) -> str:
    assert run.adapter.bound_address is not None
    return f"http://127.0.0.1:{run.adapter.bound_address[1]}{run.adapter.events_path}"


async def click(run: Running, payload: Body) -> None:
    """Deliver a click as Slack does in the adapter's mode; return once it is handled."""
    if run.adapter.bound_address is None:
        await run.slack.push(payload, envelope_type="interactive")
    else:
        async with asyncio.timeout(5):
            form = {"payload": json.dumps(payload)}
            assert await post_form(events_url(run), form, SECRET) == 200
    await run.settle()


async def card_for(run: Running) -> Post:
    run.title("lunch", "lunch is at noon")
    mention = run.slack.app_mention("<@UBOT> remember that lunch is at noon")
    if run.adapter.bound_address is None:
        await run.push(mention)
    else:
        body = json.dumps(mention)
        async with (
            aiohttp.ClientSession() as http,
            http.post(events_url(run), data=body, headers=sign(SECRET, body)) as response,
        ):
            assert response.status == 200
        await run.settle()
    [card] = run.slack.posts
    return card


async def test_a_card_has_buttons_under_its_text_and_its_reactions(running: Running) -> None:
    card = await card_for(running)
    assert [b["type"] for b in card.blocks] == ["section", "actions"]
    assert card.blocks[0]["text"]["text"] == card.text  # the fallback says the same
    assert [(b["text"]["text"], b.get("style")) for b in card.buttons] == [
        ("Approve", "primary"),
        ("Decline", "danger"),
    ]
    assert card.reactions == ["white_check_mark", "x"]


async def test_the_requesters_click_saves_and_the_card_loses_its_buttons(
    running: Running,
) -> None:
    card = await card_for(running)
    await click(running, running.slack.block_actions(card, "Approve", user="UALICE"))
    [note] = await running.bot.notes.list_notes()
    assert note.body == "lunch is at noon"
    assert card.current.startswith("✅ Saved `lunch`")
    assert "Decided by user:slack/UALICE" in card.current
    assert card.blocks == [] and running.slack.ephemerals == []


async def test_someone_elses_click_is_answered_to_them_alone(running: Running) -> None:
    card = await card_for(running)
    await click(running, running.slack.block_actions(card, "Approve", user="UMALLORY"))
    assert await running.bot.notes.list_notes() == []
    assert card.edits == [] and card.buttons  # the card waits as it was
    [answer] = running.slack.ephemerals
    assert answer.user == "UMALLORY" and answer.via == "url"
    assert answer.text.startswith("Only the person who asked (user:slack/UALICE)")
    assert answer.body["replace_original"] is False  # the card stays


@pytest.mark.parametrize(
    ("value", "expected"),
    [("lorebot:approve:1:" + "f" * 15, NOT_A_CARD), ("lorebot:approve:1:" + "f" * 16, CHANGED)],
)
async def test_a_forged_value_decides_nothing(running: Running, value: str, expected: str) -> None:
    card = await card_for(running)
    await click(running, running.slack.block_actions(card, "Approve", value=value))
    assert await running.bot.notes.list_notes() == [] and card.edits == []
    assert [e.text for e in running.slack.ephemerals] == [expected]


async def test_a_click_reaching_a_stopping_lorebot_is_acknowledged_and_answered(
    running: Running,
) -> None:
    card = await card_for(running)
    running.bot.dispatcher.stop_accepting()
    await click(running, running.slack.block_actions(card, "Approve"))  # acknowledged
    await running.slack.wait_for(lambda: running.slack.ephemerals)
    assert [e.text for e in running.slack.ephemerals] == [STOPPING]
    assert await running.bot.notes.list_notes() == [] and card.edits == []


async def test_decline_discards(running: Running) -> None:
    card = await card_for(running)
    await click(running, running.slack.block_actions(card, "Decline", user="UADMIN"))
    assert await running.bot.notes.list_notes() == []
    assert card.current.startswith("❌ Discarded") and card.blocks == []


async def test_an_unsigned_click_over_http_is_refused(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock, **HTTP)
    try:
        card = await card_for(run)
        url = events_url(run)
        body = urllib.parse.urlencode(
            {"payload": json.dumps(fake_slack.block_actions(card, "Approve"))}
        )
        headers = sign("not-the-secret", body, content_type="application/x-www-form-urlencoded")
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, data=body, headers=headers) as response,
        ):
            assert response.status == 401
        await run.settle()
        assert await run.bot.notes.list_notes() == [] and card.edits == []
    finally:
        await run.bot.stop()


def test_a_long_card_is_split_into_sections_slack_accepts() -> None:
    text = "\n".join(f"line {n} " + "x" * 90 for n in range(80))  # about 8,000 characters
    blocks = card_blocks(text, [Button("Approve", "v", "primary")])
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert all(len(s) <= SECTION_CHARS for s in sections) and len(sections) == 3
    assert "\n".join(sections) == text  # cut at line ends, nothing lost


def test_a_code_block_cut_between_sections_is_closed_and_opened_again() -> None:
    code = "\n".join(f'  "line {n}": "' + "x" * 90 + '",' for n in range(60))
    text = f"Run this?\n```\n{code}\n```\nDecide below."
    sections = [b["text"]["text"] for b in card_blocks(text, []) if b["type"] == "section"]
    assert len(sections) == 3 and all(len(s) <= SECTION_CHARS for s in sections)
    assert all(s.count("```") % 2 == 0 for s in sections)  # each renders as its own block
    assert sections[1].startswith("```\n") and sections[0].endswith("\n```")


async def test_a_waiting_card_is_sent_to_its_requester_by_dm_and_decided_there(
    running: Running, clock: FakeClock
) -> None:
    card = await card_for(running)
    clock.advance(minutes=30)
    assert await running.bot.services.reminders.remind_due() == 1
    [opened] = running.slack.calls_to("conversations.open")
    assert opened["users"] == "UALICE"
    [reminder] = [p for p in running.slack.posts if p.channel == "DALICE"]
    assert reminder.text.startswith("⏰ Card #1 is waiting for your decision")
    assert [b["text"]["text"] for b in reminder.buttons] == ["Approve", "Decline"]
    await click(running, running.slack.block_actions(reminder, "Approve", user="UALICE"))
    [note] = await running.bot.notes.list_notes()
    assert note.body == "lunch is at noon" and card.current.startswith("✅ Saved")


async def test_with_buttons_off_a_card_is_text_and_reactions(
    tmp_path: Path, fake_ollama: FakeOllama, fake_slack: FakeSlack, clock: FakeClock
) -> None:
    run = await start_bot(tmp_path, fake_ollama, fake_slack, clock, buttons=False)
    try:
        card = await card_for(run)
        assert card.blocks == [] and card.reactions == ["white_check_mark", "x"]
        assert "React ✅ to save or ❌ to discard." in card.text
    finally:
        await run.bot.stop()
