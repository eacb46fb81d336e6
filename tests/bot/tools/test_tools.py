"""The tool entries through the running core: what the model is offered, what is captured,
and a suspended turn resumed by the tool that suspended it."""

from __future__ import annotations

from datetime import timedelta

from adapters.base import APPROVE
from bot.approvals.kinds.registry import OtherKind
from bot.context.turn import TurnContext
from bot.tools.base import BuiltinTool, Call, Kind, Ok, Suspend, ToolArgs
from memory.stores.proposals import Proposal
from tests.support.harness import Harness


async def test_every_call_that_shows_a_card_is_captured_and_reads_are_not(
    harness: Harness,
) -> None:
    harness.ollama.tool_call(
        "propose_note", {"topic": "deploy-day", "summary": "deploys on tuesday"}
    )
    harness.ollama.tool_call("memory_search", {"query": "deploys"})
    harness.ollama.reply("Proposed.")
    await harness.say("note that deploys happen on tuesday")
    await harness.react(harness.adapter.cards[-1], APPROVE)

    harness.ollama.tool_call("propose_forget", {"topic": "deploy-day"})
    harness.ollama.reply("Proposed forgetting it.")
    await harness.say("we no longer deploy on tuesdays, drop that")

    captured = await harness.bot.events.fetch_since(harness.clock() - timedelta(days=1))
    actions = [event.action for event in captured]
    assert "propose_note" in actions and "propose_forget" in actions
    assert "memory_search" not in actions


class _AskArgs(ToolArgs):
    question: str


async def test_a_turn_resumes_through_the_tool_that_suspended_it(harness: Harness) -> None:
    """Any tool can wait for a card: the decision reaches that tool's `resume`."""
    bot = harness.bot

    async def ask(call: Call, args: _AskArgs) -> Suspend:
        ctx = call.ctx
        payload = {"question": args.question}
        card = f"❓ {args.question}"
        proposal = await bot.approvals.propose(
            OtherKind("question", "agree"),
            ctx.conversation,
            ctx.author,
            payload,
            card,
            call.saved_turn(),
        )
        return Suspend(proposal)

    async def answered(ctx: TurnContext, proposal: Proposal) -> Ok:
        return Ok(f"the person {proposal.status}: {proposal.payload['question']}")

    bot.toolbox.add([BuiltinTool("ask_person", "Ask.", Kind.PROPOSAL, _AskArgs, ask, answered)])
    harness.ollama.tool_call("ask_person", {"question": "restart web?"})
    await harness.say("restart web if it is down")
    assert harness.adapter.replies == []

    harness.ollama.reply("Restarting.")
    await harness.react(harness.adapter.cards[-1], APPROVE)
    assert harness.adapter.replies == ["Restarting."]
    resumed = harness.ollama.chat_requests[-1]["messages"][-1]
    assert resumed == {
        "role": "tool",
        "tool_name": "ask_person",
        "content": "the person approved: restart web?",
    }
