"""An answer with nothing in it (a small model's way of failing): lorebot asks once more,
and if the model still says nothing, answers from memory with a notice. The person never
gets "(no answer)", the history keeps neither the nudge nor the empty answer, and the
metric counts each."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from bot.core.fallback import EMPTY_NOTICE, EMPTY_NUDGE
from memory import NoteDraft, Scope
from tests.fakes.adapter import StreamingAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness

C1 = Scope.parse("channel:test/C1")


def slips(kind: str) -> float:
    return REGISTRY.get_sample_value("lorebot_model_slips_total", {"kind": kind}) or 0.0


async def stored(h: Harness) -> list[tuple[str, str]]:
    return [(e.role, e.content) for e in (await h.bot.log.fetch_history("test/C1/")).entries]


@pytest.mark.parametrize("empty", ["", "  \n ", None], ids=["nothing", "whitespace", "thinking"])
async def test_an_empty_answer_is_asked_again_once_and_the_second_answer_is_posted(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, empty: str | None
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        before = slips("empty")
        if empty is None:
            fake_ollama.reply("", thinking="the user asks about the VPN")  # thinking alone
        else:
            fake_ollama.reply(empty)
        fake_ollama.reply("The VPN gateway is vpn-2.")
        await h.say("which VPN gateway?")
        assert h.adapter.replies == ["The VPN gateway is vpn-2."]
        assert h.last_prompt()[-1] == {"role": "user", "content": EMPTY_NUDGE}
        assert await stored(h) == [("user", "which VPN gateway?"),
                                   ("assistant", "The VPN gateway is vpn-2.")]  # fmt: skip
        assert slips("empty") == before + 1
    finally:
        await h.bot.stop()


async def test_a_second_empty_answer_gets_the_answer_from_memory_with_a_notice(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        await h.bot.notes.save(NoteDraft(C1, "vpn-gateway", "the VPN gateway is vpn-2"), actor="t")
        before = slips("empty twice")
        fake_ollama.reply("")
        fake_ollama.reply("")
        await h.say("which VPN gateway?")
        [reply] = h.adapter.replies
        assert reply.startswith(EMPTY_NOTICE) and "`vpn-gateway`: the VPN gateway is vpn-2" in reply
        assert "(no answer)" not in reply
        assert (await stored(h))[-1] == ("assistant", reply)
        assert slips("empty twice") == before + 1
        assert len([r for r in fake_ollama.chat_requests if "format" not in r]) == 2
    finally:
        await h.bot.stop()


async def test_a_streamed_empty_answer_ends_as_the_answer_the_second_try_gave(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    adapter = StreamingAdapter()
    h = await start_harness(tmp_path, fake_ollama, clock, adapter=adapter)
    try:
        fake_ollama.reply("")
        fake_ollama.reply("Rotate the keys first.")
        await h.say("how do I rotate keys?")
        assert adapter.sent[-1].current == "Rotate the keys first."
        assert (await stored(h))[-1] == ("assistant", "Rotate the keys first.")
    finally:
        await h.bot.stop()
