"""Replies on Discord while they are written: one post, then edits, through discord.py's real
gateway and REST against the fake Discord; and the single message `send` posts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from adapters.base import SEARCHING, Event, Message, StreamsReplies
from adapters.discord.adapter import DiscordAdapter
from adapters.discord.text import EMPTY_REPLY
from tests.fakes.discord import (
    BOT,
    CHANNEL_ID,
    FakeDiscord,
    fake_discord_fixture,  # noqa: F401  (the fake_discord fixture)
)
from tests.support.discord import adapter_for, mention

POSTS = f"/channels/{CHANNEL_ID}/messages"


@dataclass
class Started:
    adapter: DiscordAdapter
    discord: FakeDiscord
    events: list[Event]

    async def question(self, text: str = "which VPN gateway?") -> Message:
        """A person mentions the bot in the channel; the `Message` the adapter made of it."""
        await self.discord.send_message(f"{mention(BOT.id)} {text}", mentions=[BOT])
        [event] = await self.discord.wait_until(lambda: self.events)
        assert isinstance(event, Message)
        return event

    def posts(self) -> int:
        return len(self.discord.requests_to("POST", POSTS))

    def edits(self) -> list[str]:
        return [str(r.body["content"]) for r in self.discord.requests_to("PATCH", POSTS)]


@pytest.fixture
async def started(fake_discord: FakeDiscord) -> AsyncIterator[Started]:
    events: list[Event] = []

    async def sink(event: Event) -> None:
        events.append(event)

    adapter = adapter_for(fake_discord)
    await adapter.start(sink)
    try:
        yield Started(adapter, fake_discord, events)
    finally:
        await adapter.close()


async def test_a_streamed_reply_is_posted_once_then_edited_to_the_final_text(
    started: Started,
) -> None:
    asked = await started.question()
    assert isinstance(started.adapter, StreamsReplies)
    assert started.adapter.stream_interval_s == 1.0
    stream = started.adapter.stream_reply(asked.conversation, asked.author)
    assert stream.posted is None

    await stream.show("The VPN")
    await stream.show("The VPN gateway is")
    final = await stream.finish("The VPN gateway is vpn-2.")

    [reply] = started.discord.posted
    assert started.posts() == 1
    assert reply.content == "The VPN"
    assert reply.body["message_reference"]["message_id"] == int(asked.message_id)
    assert started.edits() == ["The VPN gateway is", "The VPN gateway is vpn-2."]
    assert reply.current == "The VPN gateway is vpn-2."
    assert final.message_id == str(reply.id) and stream.posted == final


async def test_a_short_reply_is_one_post_and_no_edit(started: Started) -> None:
    asked = await started.question()
    stream = started.adapter.stream_reply(asked.conversation, asked.author)
    final = await stream.finish("vpn-2.")

    [reply] = started.discord.posted
    assert (reply.content, started.edits()) == ("vpn-2.", [])
    assert "message_reference" in reply.body
    assert final.message_id == str(reply.id)


async def test_an_unchanged_text_makes_no_edit(started: Started) -> None:
    asked = await started.question()
    stream = started.adapter.stream_reply(asked.conversation, asked.author)
    await stream.show("The VPN gateway")
    await stream.show("The VPN gateway")
    await stream.show("The VPN gateway is vpn-2.")
    await stream.show("The VPN gateway is vpn-2.")
    await stream.finish("The VPN gateway is vpn-2.")

    assert started.posts() == 1
    assert started.edits() == ["The VPN gateway is vpn-2."]


async def test_a_refused_edit_ends_live_updates_and_finish_still_sets_the_final_text(
    started: Started,
) -> None:
    asked = await started.question()
    stream = started.adapter.stream_reply(asked.conversation, asked.author)
    await stream.show("The VPN")
    started.discord.refuse_next_edit()
    await stream.show("The VPN gateway")  # refused: no more live updates
    await stream.show("The VPN gateway is")
    await stream.finish("The VPN gateway is vpn-2.")

    [reply] = started.discord.posted
    assert started.edits() == ["The VPN gateway", "The VPN gateway is vpn-2."]
    assert reply.current == "The VPN gateway is vpn-2."


async def test_a_refused_first_post_is_posted_by_finish_still_as_a_reply(
    started: Started,
) -> None:
    asked = await started.question()
    stream = started.adapter.stream_reply(asked.conversation, asked.author)
    started.discord.refuse_posts(CHANNEL_ID)
    await stream.show("The VPN")
    assert stream.posted is None
    del started.discord.refused_posts[CHANNEL_ID]
    await stream.show("The VPN gateway")  # live updates ended with the refusal
    await stream.finish("The VPN gateway is vpn-2.")

    assert started.posts() == 2
    [reply] = started.discord.posted
    assert reply.content == "The VPN gateway is vpn-2."
    assert reply.body["message_reference"]["message_id"] == int(asked.message_id)


async def test_send_posts_one_message_clipped_to_the_limit(started: Started) -> None:
    asked = await started.question()
    long = "check the dashboards, then the logs. " * 80  # 2,960 characters
    await started.adapter.send(asked.conversation, long)
    await started.adapter.send(asked.conversation, "  ")

    long_reply, empty_reply = started.discord.posted
    assert started.posts() == 2
    assert len(long_reply.content) == 2000 and long_reply.content.endswith("…")
    assert long.startswith(long_reply.content[:-1])
    assert empty_reply.content == EMPTY_REPLY  # Discord refuses an empty message
    assert "message_reference" in long_reply.body and "message_reference" not in empty_reply.body


async def test_working_shows_typing_and_a_status_change_shows_nothing_more(
    started: Started,
) -> None:
    asked = await started.question()
    before = len(started.discord.requests)
    async with started.adapter.working(asked.conversation) as status:
        await status(SEARCHING)
    during = [(r.method, r.path) for r in started.discord.requests[before:]]
    assert during == [("POST", f"/channels/{CHANNEL_ID}/typing")]
