"""The approval layer under attack: private notes through channel cards, stale cards, cards
from read-only channels, busy reactions, a database that cannot be written, and decisions

made from the shell."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.base import APPROVE, REJECT
from bot.cli import main as cli
from bot.core.replies import BUSY_REPLY, UNAVAILABLE_REPLY
from memory import NoteDraft, Scope
from memory.sqlite.driver import sqlite_module
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.skills import write_skill

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines

CHANNEL = Scope.parse("channel:test/C1")
ALICE = Scope.parse("user:test/UALICE")
PRIVATE_SUMMARY = "locker code is 4711"


async def _private_locker_note(h: Harness) -> None:
    h.script_title("locker-code", PRIVATE_SUMMARY)
    await h.say("remember that my locker code is 4711", dm=True)
    await h.react(h.adapter.cards[-1], APPROVE)
    note = await h.bot.notes.fetch(ALICE, "locker-code")
    assert note is not None and note.private


def _everything_posted_in(h: Harness, channel: str) -> str:
    posted = [s for s in h.adapter.sent if s.conversation.channel_id == channel]
    return "\n".join("\n".join([s.text, *s.edits]) for s in posted)


# --- a private note never leaks through a channel card ------------------------------------


async def test_a_channel_remember_never_quotes_or_changes_a_private_note(harness: Harness) -> None:
    await _private_locker_note(harness)

    harness.script_title("locker-code", "locker code changed to 9999")
    await harness.say("remember that my locker code changed to 9999")
    card = harness.adapter.cards[-1]
    assert card.conversation.channel_id == "C1"
    assert "Replaces" not in card.text and "Update" not in card.text
    assert "`locker-code-2`" in card.text  # a separate note of its own

    await harness.react(card, APPROVE)
    private = await harness.bot.notes.fetch(ALICE, "locker-code")
    assert private is not None and private.private and private.summary == PRIVATE_SUMMARY
    public = await harness.bot.notes.fetch(ALICE, "locker-code-2")
    assert public is not None and not public.private and "9999" in public.body
    channel_text = _everything_posted_in(harness, "C1")
    assert "4711" not in channel_text and PRIVATE_SUMMARY not in channel_text


async def test_a_model_proposal_in_a_channel_never_reveals_a_private_note(
    harness: Harness,
) -> None:
    await _private_locker_note(harness)
    harness.ollama.tool_call(
        "propose_note",
        {"topic": "locker-code", "summary": "locker code is 0000", "scope": "user"},
    )
    harness.ollama.reply("I proposed it.")
    await harness.say("note my locker code 0000 for me")
    card = harness.adapter.cards[-1]
    await harness.react(card, APPROVE)

    private = await harness.bot.notes.fetch(ALICE, "locker-code")
    assert private is not None and private.private and private.summary == PRIVATE_SUMMARY
    assert "4711" not in _everything_posted_in(harness, "C1")


async def test_a_private_note_made_while_a_channel_card_waits_is_not_published(
    harness: Harness,
) -> None:
    harness.script_title("gym-time", "gym at 7")
    await harness.say("remember that I go to the gym at 7")
    channel_card = harness.adapter.cards[-1]
    # Before the channel card is decided, the same topic becomes a private DM note.
    harness.script_title("gym-time", "gym at 6 with my doctor")
    await harness.say("remember that I go to the gym at 6 with my doctor", dm=True)
    await harness.react(harness.adapter.cards[-1], APPROVE)

    await harness.react(channel_card, APPROVE)
    note = await harness.bot.notes.fetch(ALICE, "gym-time")
    assert note is not None and note.private and "doctor" in note.body
    assert channel_card.current.startswith("⚠️ Not applied")
    assert "doctor" not in _everything_posted_in(harness, "C1")


# --- a decision applies only to the note the card showed -----------------------------------


async def test_an_approval_never_overwrites_a_note_changed_after_its_card(
    harness: Harness,
) -> None:
    await harness.bot.notes.save(NoteDraft(CHANNEL, "vpn", "the VPN is vpn-1"), actor="seed")
    harness.script_title("vpn", "the VPN is vpn-2")
    await harness.say("remember that the VPN is vpn-2")
    card = harness.adapter.cards[-1]
    assert "Replaces: the VPN is vpn-1" in card.text
    await harness.bot.notes.save(NoteDraft(CHANNEL, "vpn", "the VPN is vpn-3"), actor="admin")

    await harness.react(card, APPROVE)
    note = await harness.bot.notes.fetch(CHANNEL, "vpn")
    assert note is not None and note.summary == "the VPN is vpn-3"
    assert card.current.startswith("⚠️ Not applied") and "changed after this card" in card.current


async def test_a_forget_approved_after_a_change_keeps_the_newer_note(harness: Harness) -> None:
    await harness.bot.notes.save(NoteDraft(CHANNEL, "vpn", "the VPN is vpn-1"), actor="seed")
    await harness.say("forget vpn")
    card = harness.adapter.cards[-1]
    await harness.bot.notes.save(NoteDraft(CHANNEL, "vpn", "the VPN is vpn-3"), actor="admin")

    await harness.react(card, APPROVE)
    note = await harness.bot.notes.fetch(CHANNEL, "vpn")
    assert note is not None and note.summary == "the VPN is vpn-3"
    assert card.current.startswith("⚠️ Not applied")


# --- read-only is checked when a card is decided, and by undo ------------------------------


@pytest.fixture
async def became_read_only(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> AsyncIterator[Harness]:
    """A bot that saved a note in C1 and left a card waiting there, restarted with C1
    read-only."""
    before = await start_harness(tmp_path, fake_ollama, clock)
    before.script_title("deploys", "deploys on tuesday")
    await before.say("remember that deploys happen on tuesday")
    await before.react(before.adapter.cards[-1], APPROVE)
    before.script_title("standup", "standup at 10")
    await before.say("remember that standup is at 10")  # left waiting
    await before.bot.stop()
    after = await start_harness(
        tmp_path, fake_ollama, clock, before.adapter, bot={"read_only_channels": [str(CHANNEL)]}
    )
    try:
        yield after
    finally:
        await after.bot.stop()


async def test_a_card_from_before_a_channel_became_read_only_is_not_applied(
    became_read_only: Harness,
) -> None:
    h = became_read_only
    card = h.adapter.cards[-1]
    await h.react(card, APPROVE)
    assert await h.bot.notes.fetch(CHANNEL, "standup") is None
    assert card.current.startswith("⚠️ Not applied") and "read-only" in card.current


async def test_undo_in_a_read_only_channel_changes_nothing(became_read_only: Harness) -> None:
    h = became_read_only
    await h.say("undo")
    assert "read-only" in h.adapter.replies[-1]
    assert await h.bot.notes.fetch(CHANNEL, "deploys") is not None


# --- a reaction turned away while busy can be given again ----------------------------------


async def test_a_reaction_turned_away_while_busy_counts_when_given_again(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, bot={"queue_size": 1})
    try:
        h.script_title("wiki", "the wiki moved")
        await h.say("remember that the wiki moved to docs.internal")
        card = h.adapter.cards[-1]
        reaction = h.adapter.reaction(card, APPROVE)

        fake_ollama.delay(0.3)
        fake_ollama.reply("slow answer")
        await h.bot.dispatcher.submit(h.adapter.message("a slow question", channel="C9"))
        await h.bot.dispatcher.submit(reaction)  # the queue is full: turned away
        await h.bot.dispatcher.wait_idle()
        assert BUSY_REPLY in h.adapter.replies
        assert await h.bot.notes.fetch(CHANNEL, "wiki") is None

        await h.send(reaction)  # the same reaction delivered again once the bot is free
        assert await h.bot.notes.fetch(CHANNEL, "wiki") is not None
    finally:
        await h.bot.stop()


async def test_a_reaction_removed_and_added_again_is_a_new_decision(harness: Harness) -> None:
    harness.script_title("wiki", "the wiki moved")
    await harness.say("remember that the wiki moved to docs.internal")
    card = harness.adapter.cards[-1]
    reaction = harness.adapter.reaction(card, APPROVE, user="UMALLORY")
    await harness.send(reaction)  # Mallory may not decide: ignored, but seen
    removed = harness.adapter.reaction(card, APPROVE, user="UMALLORY")
    removal = type(removed)(
        removed.conversation,
        removed.user,
        removed.emoji,
        removed.target_message_id,
        reaction.event_id,
        added=False,
    )
    await harness.send(removal)
    assert not await harness.bot.seen.seen(f"test:{reaction.event_id}")


# --- a database that cannot be written: the person is told ----------------------------------


# A SQLite write lock held by another program; PostgreSQL's faults are in
# tests/memory/postgres/test_pg_faults.py.
@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
async def test_an_event_that_cannot_be_recorded_gets_an_apology(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock, database={"busy_timeout_ms": 50})
    # The same SQLite library as lorebot's: POSIX locks of two copies in one process
    # would not see each other.
    holder = sqlite_module().connect(h.bot.settings.database.path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # a long import holding the write lock
        await h.say("hello there")
        assert h.adapter.replies == [UNAVAILABLE_REPLY]
        holder.execute("ROLLBACK")

        fake_ollama.reply("Hello!")
        await h.say("hello again")
        assert h.adapter.replies[-1] == "Hello!"
    finally:
        holder.close()
        await h.bot.stop()


# --- `lorebot proposals approve` does what a reaction does ---------------------------------


@pytest.fixture
async def live(
    tmp_path: Path, fake_ollama: FakeOllama, env: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    """A running bot whose clock starts now, beside CLI commands that use the real clock."""
    h = await start_harness(tmp_path, fake_ollama, FakeClock(datetime.now(UTC)))
    _cli_env(h, monkeypatch)
    try:
        yield h
    finally:
        await h.bot.stop()


def _cli_env(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = h.bot.settings
    monkeypatch.setenv("LOREBOT_DATABASE__PATH", str(settings.database.path))
    monkeypatch.setenv("LOREBOT_SKILLS__USER_ROOT", str(settings.skills.user_root))
    monkeypatch.setenv("LOREBOT_SKILLS__HOME_ROOT", str(settings.skills.home_root))


async def _approve_from_shell(
    h: Harness, proposal_id: int, capsys: pytest.CaptureFixture[str]
) -> str:
    code = await asyncio.to_thread(cli.main, ["proposals", "approve", str(proposal_id)])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, captured.err
    assert await h.bot.follow_up() == 1  # what the daemon's follow-up loop does
    return out


async def test_approving_a_skill_load_from_the_shell_activates_it_and_resumes_the_turn(
    live: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    write_skill(
        live.bot.settings.skills.user_root,
        "incident-triage",
        description="Triage an incident. Use when something is down.",
        body="1. Page the owner.\n",
    )
    live.ollama.tool_call("load_skill", {"name": "incident-triage"})
    await live.say("the API is down")
    [card] = live.adapter.cards
    [proposal] = await live.bot.proposals.fetch_recent("pending")

    live.ollama.reply("Page the owner first.")
    out = await _approve_from_shell(live, proposal.id, capsys)
    assert "Loaded the skill `incident-triage`" in out
    assert "running lorebot will update the card" in out
    assert live.adapter.replies == ["Page the owner first."]
    assert card.current.startswith("✅ Loaded the skill")
    assert "incident-triage" in await live.bot.active_skills.fetch(card.conversation.key)
    assert await live.bot.follow_up() == 0  # finished once


async def test_approving_a_skill_creation_from_the_shell_writes_it(
    live: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    live.ollama.tool_call(
        "propose_skill",
        {
            "name": "release-notes",
            "description": "Write release notes. Use when asked.",
            "body": "1. List the merged changes.\n",
        },
    )
    live.ollama.reply("I proposed the skill.")
    await live.say("make a skill for release notes")
    card = live.adapter.cards[-1]
    [proposal] = await live.bot.proposals.fetch_recent("pending")

    out = await _approve_from_shell(live, proposal.id, capsys)
    assert "no skill folder" not in out
    assert (live.bot.settings.skills.user_root / "release-notes" / "SKILL.md").is_file()
    assert card.current.startswith("✅ Created the skill `release-notes`")


async def test_a_note_card_decided_from_the_shell_stops_asking(
    live: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    live.script_title("wiki", "the wiki moved")
    await live.say("remember that the wiki moved to docs.internal")
    card = live.adapter.cards[-1]
    [proposal] = await live.bot.proposals.fetch_recent("pending")

    code = await asyncio.to_thread(cli.main, ["proposals", "reject", str(proposal.id)])
    assert code == 0
    assert card.edits == []  # the shell has no Slack or Discord connection…
    await live.bot.follow_up()  # …the daemon finishes the card
    assert card.current.startswith(f"{REJECT} Discarded")
    await live.react(card, APPROVE)  # a late reaction changes nothing
    assert await live.bot.notes.fetch(CHANNEL, "wiki") is None


async def test_a_card_decided_while_lorebot_was_stopped_is_finished_at_start(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = FakeClock(datetime.now(UTC))
    adapter = RecordingAdapter()
    first = await start_harness(tmp_path, fake_ollama, clock, adapter)
    first.script_title("wiki", "the wiki moved")
    await first.say("remember that the wiki moved to docs.internal")
    [proposal] = await first.bot.proposals.fetch_recent("pending")
    _cli_env(first, monkeypatch)
    await first.bot.stop()

    code = await asyncio.to_thread(cli.main, ["proposals", "approve", str(proposal.id)])
    assert code == 0 and "when it next starts" in capsys.readouterr().out
    second = await start_harness(tmp_path, fake_ollama, clock, adapter)
    try:
        for _ in range(500):  # the follow-up task runs right after the start
            if adapter.cards[-1].edits:
                break
            await asyncio.sleep(0.01)
        assert adapter.cards[-1].current.startswith("✅ Saved `wiki`")
    finally:
        await second.bot.stop()


async def test_jobs_list_works_while_the_daemon_runs(
    live: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.to_thread(cli.main, ["jobs", "list"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "already using" not in captured.err and "maintenance" in captured.out
