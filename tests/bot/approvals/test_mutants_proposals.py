"""A ✅ on a message that is not a card changes nothing and says nothing."""

from __future__ import annotations

import pytest

from adapters.base import APPROVE
from tests.support.harness import Harness

pytestmark = pytest.mark.usefixtures("on_each_engine")  # storage on both engines


async def test_a_reaction_on_an_ordinary_reply_is_ignored(harness: Harness) -> None:
    harness.ollama.reply("The VPN host is vpn-2.")
    await harness.say("what is the VPN host?")
    [reply] = [s for s in harness.adapter.sent if s.text == "The VPN host is vpn-2."]
    sent = list(harness.adapter.sent)
    await harness.react(reply, APPROVE)
    assert harness.adapter.sent == sent
    assert await harness.bot.proposals.fetch_recent() == []
