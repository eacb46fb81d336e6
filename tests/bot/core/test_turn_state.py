"""What a turn suspended on a card keeps in its proposal: nothing that holds a credential,
its mistakes included (the exact arguments of its later calls wait in memory); and a turn
stored by the previous lorebot resumes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from adapters.base import APPROVE, ConversationRef, UserRef
from bot.approvals.kinds.registry import OtherKind
from bot.context.suspended import BrokenCall, PendingCall, SuspendedTurn
from bot.context.turn import TurnContext, make_context
from bot.core.turn_state import HeldCalls, Turn
from bot.tools.base import BuiltinTool, Call, Kind, Ok, Suspend, ToolArgs
from memory.stores.proposals import Proposal
from tests.support.harness import Harness

OUR_TOKEN = "xoxb-2048-our-own-bot-token"


def test_a_suspended_turns_mistakes_are_kept_without_credentials() -> None:
    turn = Turn(
        [{"role": "user", "content": "restart web"}],
        mistakes=[
            'error: invalid arguments for deploy: {"password": "hunter2-Q7x"} is not a number',
            f"error: unknown tool called with {OUR_TOKEN}",
        ],
    )
    ctx = make_context(ConversationRef("test", "C1"), UserRef("test", "UALICE"), False)
    saved = json.dumps(turn.saved(ctx, "restart", HeldCalls([OUR_TOKEN])).to_json())
    assert "hunter2" not in saved and OUR_TOKEN not in saved
    assert '{\\"password\\": \\"[REDACTED]\\"} is not a number' in saved


class _AskArgs(ToolArgs):
    question: str


def _ask_person(harness: Harness) -> None:
    """A tool that waits for a person's ✅ on a card, then tells the model the decision."""
    bot = harness.bot

    async def ask(call: Call, args: _AskArgs) -> Suspend:
        ctx = call.ctx
        proposal = await bot.approvals.propose(
            OtherKind("question", "agree"),
            ctx.conversation,
            ctx.author,
            {"question": args.question},
            f"❓ {args.question}",
            call.saved_turn(),
        )
        return Suspend(proposal)

    async def answered(ctx: TurnContext, proposal: Proposal) -> Ok:
        return Ok(f"the person {proposal.status}: {proposal.payload['question']}")

    bot.toolbox.add([BuiltinTool("ask_person", "Ask.", Kind.PROPOSAL, _AskArgs, ask, answered)])


def _as_stored_before_versions(turn: SuspendedTurn) -> dict[str, Any]:
    """The turn in the shape lorebot stored before the shape had a version."""
    pending = [
        ["", call.problem] if isinstance(call, BrokenCall) else [call.name, call.arguments]
        for call in turn.pending
    ]
    return {
        "tool": turn.tool,
        "messages": list(turn.messages),
        "round": turn.round,
        "pending": pending,
        "conversation": dataclasses.asdict(turn.conversation),
        "author": dataclasses.asdict(turn.author),
        "read_only": turn.read_only,
        "start": turn.start,
        "mistakes": list(turn.mistakes),
    }


async def test_a_turn_stored_by_the_previous_lorebot_resumes(harness: Harness) -> None:
    """Its later call runs after the decision, and how its earlier calls ended is read
    from what the model was told: the same search again is not run a second time."""
    _ask_person(harness)
    search = {"name": "memory_search", "arguments": {"query": "web"}}
    ask = {"name": "ask_person", "arguments": {"question": "restart web?"}}
    harness.ollama.reply(tool_calls=[search, ask, search])
    await harness.say("restart web if it is down")
    [proposal] = await harness.bot.proposals.fetch_recent("pending")
    saved = SuspendedTurn.from_json(proposal.payload["turn"])
    assert saved.pending == (PendingCall("memory_search", {"query": "web"}),)
    payload = dict(proposal.payload, turn=_as_stored_before_versions(saved))
    async with harness.bot.db.write() as conn:
        await conn.execute(
            "UPDATE proposals SET payload_json = ? WHERE id = ?", (json.dumps(payload), proposal.id)
        )

    harness.ollama.reply("Restarting.")
    await harness.react(harness.adapter.cards[-1], APPROVE)
    assert harness.adapter.replies == ["Restarting."]
    told = harness.ollama.chat_requests[-1]["messages"][-3:]
    assert [m["tool_name"] for m in told] == ["memory_search", "ask_person", "memory_search"]
    assert told[1]["content"] == "the person approved: restart web?"
    assert told[2]["content"].startswith("You already called memory_search")
