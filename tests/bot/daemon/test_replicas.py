"""Replicas on one PostgreSQL database: one leads (it alone holds the leader-only gateway,
a Discord stand-in), the others stand by; a standby takes over when the leader stops or
loses its lock's connection, and at no moment do two hold the gateway; a card decided at
another replica than the one whose turn waits on it resumes that turn there, once; one
conversation's events run one at a time, in order, whichever replica took them. PostgreSQL only:
on SQLite the database file's lock refuses a second daemon (`test_daemon_promises.py`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine

from adapters.base import APPROVE, EventSink
from bot.cli.main import main
from bot.daemon import replica as replica_module
from bot.daemon.app import Bot
from memory import NoteDraft, Scope
from memory.postgres import leadership
from memory.stores.leadership import LEASE_S
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.harness import make_settings
from tests.support.polling import until
from tests.support.postgres import PostgresServer
from tests.support.skills import write_skill
from tests.support.stalling_proxy import StallingProxy

BEAT_S = 0.1
MONDAY_MORNING = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class Gateway:
    """Who holds the one gateway connection of a bot token, and the most ever at once."""

    def __init__(self) -> None:
        self.holders: set[str] = set()
        self.most = 0


class GatewayAdapter(RecordingAdapter):
    """A leader-only platform's adapter (named as Discord's) on a shared `Gateway`."""

    platform = "discord"

    def __init__(self, gateway: Gateway, name: str) -> None:
        super().__init__()
        self.gateway, self.name = gateway, name

    async def start(self, sink: EventSink) -> None:
        await super().start(sink)
        self.gateway.holders.add(self.name)
        self.gateway.most = max(self.gateway.most, len(self.gateway.holders))

    async def close(self) -> None:
        await super().close()
        self.gateway.holders.discard(self.name)


@pytest.fixture(autouse=True)
def quick_beats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replica_module, "BEAT_S", BEAT_S)


@pytest.fixture
async def replicas(
    tmp_path: Path, fake_ollama: FakeOllama, pg_url: str
) -> AsyncIterator[Callable[..., Bot]]:
    """Makes a replica bot on the test's database (started by the test, stopped here)."""
    made: list[Bot] = []

    def replica(name: str, gateway: Gateway, url: str = pg_url, **sections: dict[str, Any]) -> Bot:
        settings = make_settings(
            tmp_path / name / "bot.db", fake_ollama.url, database={"url": url}, **sections
        )
        bot = Bot(settings, [GatewayAdapter(gateway, name), RecordingAdapter()])
        made.append(bot)
        return bot

    yield replica
    for bot in made:
        await bot.stop()


async def test_one_replica_leads_and_a_standby_takes_over_when_it_stops(
    replicas: Callable[..., Bot],
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gateway = Gateway()
    first, second = replicas("a", gateway), replicas("b", gateway)
    await first.start()
    await second.start()
    assert gateway.holders == {"a"}
    assert (first.replica.role, second.replica.role) == ("leader", "standby")
    # Both answer their own platform (Slack's stand-in) meanwhile.
    assert all(bot.adapters["test"].connected for bot in (first, second))

    monkeypatch.setenv("LOREBOT_DATABASE__URL", pg_url)
    await until(lambda: first.replica.beats and second.replica.beats, within=5)
    listed = await _doctor_replicas(capsys)
    assert [r["role"] for r in listed] == ["leader", "standby"]
    assert [r["id"] for r in listed] == [first.replica.id, second.replica.id]

    await first.stop()
    await until(lambda: gateway.holders == {"b"}, within=5)
    assert second.replica.role == "leader"
    assert gateway.most == 1
    assert [r["id"] for r in await _doctor_replicas(capsys)] == [second.replica.id]


async def test_the_scheduled_jobs_run_on_the_leader_alone_and_move_with_the_lead(
    replicas: Callable[..., Bot], fake_ollama: FakeOllama
) -> None:
    """A leader stopped while its digest waits on the model stops at once; the standby
    takes the lead and posts that digest, once."""
    jobs = {"enabled": True, "digests": [{"channel": "channel:test/C1", "cron": "0 9 * * 1-5"}]}
    with time_machine.travel(MONDAY_MORNING - timedelta(minutes=30), tick=False) as traveller:
        writer = replicas("writer", Gateway())
        await writer.start()
        await writer.notes.save(
            NoteDraft(Scope.parse("channel:test/C1"), "deploy-day", "we deploy on tuesdays"),
            actor="user:test/UALICE",
        )
        await writer.stop()
        traveller.move_to(MONDAY_MORNING + timedelta(minutes=1))
        fake_ollama.hold_chats()  # the digest's summary waits on the model
        gateway = Gateway()
        first, second = replicas("a", gateway, jobs=jobs), replicas("b", gateway, jobs=jobs)
        await first.start()
        await second.start()

        def scheduling(bot: Bot) -> bool:
            return bot.jobs.scheduler is not None and bot.jobs.scheduler.running

        assert scheduling(first) and not scheduling(second)
        await fake_ollama.wait_for_requests(1)  # the leader's catch-up runs the digest
        await first.stop()
        stopped = await second.jobs.runs.fetch("digest", "channel:test/C1", "2026-12-07T09:00Z")
        assert stopped is not None and stopped.status == "failed"
        assert stopped.error == "stopped before it finished"

        fake_ollama.release_chats()
        await until(lambda: scheduling(second))
        await until(lambda: digests(second))
        assert digests(first) == [] and len(digests(second)) == 1
        assert "deploy-day" in digests(second)[0]


def digests(bot: Bot) -> list[str]:
    adapter = bot.adapters["test"]
    assert isinstance(adapter, RecordingAdapter)
    return [s.text for s in adapter.sent if s.text.startswith("📰 Digest")]


async def test_a_leader_cut_off_from_postgresql_stops_before_a_standby_takes_over(
    replicas: Callable[..., Bot],
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replica_module, "LEASE_S", 1.0)
    gateway = Gateway()
    async with StallingProxy.to(pg_url) as proxy:
        first, second = replicas("a", gateway, proxy.url), replicas("b", gateway)
        await first.start()
        await second.start()
        assert gateway.holders == {"a"}

        proxy.stall()  # packets stop, no connection closes: a partition
        await until(lambda: not gateway.holders, within=1.0 + 2 * BEAT_S + 1)
        await asyncio.sleep(5 * BEAT_S)
        # The server still holds the lock for the cut-off session: nobody may lead yet.
        assert gateway.holders == set() and second.replica.role == "standby"

        proxy.drop()  # what the server's keepalives end, after SERVER_GIVES_UP_S
        await until(lambda: gateway.holders == {"b"}, within=5)
        await first.stop()
    assert gateway.most == 1


async def test_after_postgresql_restarts_one_replica_leads_and_both_answer(
    replicas: Callable[..., Bot],
    postgres_server: PostgresServer,
    fake_ollama: FakeOllama,
) -> None:
    gateway = Gateway()
    bots = [replicas("a", gateway), replicas("b", gateway)]
    for bot in bots:
        await bot.start()
    assert gateway.holders == {"a"}

    postgres_server.restart()  # every connection of both replicas is cut
    await until(lambda: not bots[0].replica.leading or bots[1].replica.leading, within=15)
    await until(lambda: sum(bot.replica.leading for bot in bots) == 1, within=15)
    await until(lambda: len(gateway.holders) == 1, within=5)
    assert gateway.most == 1

    fake_ollama.default_reply = lambda body: "Back."
    for n, bot in enumerate(bots):
        await _say(bot, f"are you there, {n}?")
    own = [bot.adapters["test"] for bot in bots]
    assert [a.replies for a in own if isinstance(a, RecordingAdapter)] == [["Back."], ["Back."]]


async def test_a_card_approved_at_another_replica_resumes_the_waiting_turn_there(
    replicas: Callable[..., Bot], fake_ollama: FakeOllama
) -> None:
    gateway = Gateway()
    bots = [replicas("a", gateway), replicas("b", gateway)]
    for bot in bots:
        write_skill(
            bot.settings.skills.user_root,
            "incident-triage",
            description="Triage an incident. Use when something is down.",
            body="1. Page.\n",
        )
        await bot.start()
    first, second = (bot.adapters["test"] for bot in bots)
    assert isinstance(first, RecordingAdapter) and isinstance(second, RecordingAdapter)
    second.sent = first.sent  # one platform: either replica edits what the other posted

    fake_ollama.tool_call("load_skill", {"name": "incident-triage"})
    await _say(bots[0], "the API is down")
    [card] = first.cards
    fake_ollama.reply("Page the owner first.")
    await bots[1].dispatcher.submit(second.reaction(card, APPROVE))  # reaches the other one
    await bots[1].dispatcher.wait_idle()

    assert card.current.startswith("✅ Loaded the skill")
    assert first.replies[-1] == "Page the owner first."
    assert len(await bots[0].proposals.fetch_recent("approved")) == 1
    assert await bots[0].follow_up() == 0 and await bots[1].follow_up() == 0  # finished once


async def test_one_conversations_events_at_two_replicas_run_one_at_a_time_in_order(
    replicas: Callable[..., Bot], fake_ollama: FakeOllama
) -> None:
    gateway = Gateway()
    bots = [replicas("a", gateway), replicas("b", gateway)]
    for bot in bots:
        await bot.start()
    first, second = (bot.adapters["test"] for bot in bots)
    assert isinstance(first, RecordingAdapter) and isinstance(second, RecordingAdapter)
    second.sent = first.sent  # one platform, as Slack is to both
    fake_ollama.delay(0.5)
    fake_ollama.reply("The first answer.")
    fake_ollama.reply("The second answer.")
    await bots[0].dispatcher.submit(first.message("first question", channel="C1"))
    await until(lambda: len(fake_ollama.chat_requests) == 1, within=5)
    # The channel's next event reaches the other replica while the first one's turn runs:
    # it waits for that turn, and is handled by the replica holding the channel.
    await bots[1].dispatcher.submit(second.message("second question", channel="C1"))
    await bots[1].dispatcher.wait_idle()
    await until(lambda: len(first.replies) == 2)
    assert first.replies == ["The first answer.", "The second answer."]

    async def inbox_empty() -> bool:  # the entry is finished just after its reply is posted
        return await bots[0].stores.inbox.waiting() == 0

    await until(inbox_empty)


async def test_the_lock_connection_tells_the_server_to_notice_a_cut_off_leader(
    pg_url: str,
) -> None:
    lock = leadership.AdvisoryLeadership(pg_url)
    assert await lock.try_lead()
    try:
        assert lock._conn is not None
        shown = {}
        for name in ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count"):
            cursor = await lock._conn.execute(f"SHOW {name}")
            row = await cursor.fetchone()
            assert row is not None
            shown[name] = int(str(row[0]).removesuffix("s"))
        given_up = shown["tcp_keepalives_idle"] + (
            shown["tcp_keepalives_interval"] * shown["tcp_keepalives_count"]
        )
        assert given_up == leadership.SERVER_GIVES_UP_S > LEASE_S
        other = leadership.AdvisoryLeadership(pg_url)
        assert not await other.try_lead()  # held: a second replica stands by
        await other.release()
    finally:
        await lock.release()
    again = leadership.AdvisoryLeadership(pg_url)
    assert await again.try_lead()  # released with its connection
    await again.release()


async def _doctor_replicas(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    """The replicas as `lorebot doctor --json` lists them (run beside this test's loop)."""
    await asyncio.to_thread(main, ["doctor", "--json"])
    listed: list[dict[str, object]] = json.loads(capsys.readouterr().out)["replicas"]
    return listed


async def _say(bot: Bot, text: str) -> None:
    """A message to `bot` on its own platform (Slack's stand-in), answered before return."""
    adapter = bot.adapters["test"]
    assert isinstance(adapter, RecordingAdapter)
    await bot.dispatcher.submit(adapter.message(text, dm=True))
    await bot.dispatcher.wait_idle()
