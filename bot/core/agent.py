"""One agent turn: assemble the prompt, call the model, run its tool calls, reply.

The model never writes memory: its proposing tools create proposals that a person
approves on a card. Each tool is one entry of a `Toolbox` (bot/tools/); calls are
validated, time-limited and bounded in number, and a broken call is answered to the model
as an error it can correct. A tool that needs a person's decision suspends the turn into
its proposal, and the turn resumes when the card is decided.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from bot import metrics
from bot.actions.mcp import McpServers
from bot.approvals.kinds.registry import get_kind
from bot.backoff import Backoff
from bot.config.settings import Settings
from bot.context.scopes import user_scope
from bot.context.skills import SkillUse
from bot.context.suspended import BrokenCall, SuspendedTurn
from bot.context.turn import TurnContext
from bot.core.fallback import OFFLINE_NOTICE, notice_for, offline_answer
from bot.core.history import History
from bot.core.live_reply import Progress
from bot.core.prompt import BYTES_PER_TOKEN, render_prefix, user_turn
from bot.core.recall import Recall, not_shown
from bot.core.servers import connect_wait, servers_unavailable
from bot.core.slips import UNREADABLE, GiveUp, Slips
from bot.core.turn_state import (
    HeldCalls,
    Told,
    Turn,
    calls_this_round,
    cards_this_turn,
    clip_name,
    echo,
    pending_call,
)
from bot.fencing import ClaimLost
from bot.model.arguments import ToolArgumentError
from bot.model.client import ChatResult, Model, ModelUnavailable
from bot.split import clip_reply
from bot.tasks import stop_if_asked
from bot.tools.base import Call, Kind, Suspend, Tool, Toolbox, ToolError, ToolResult
from memory import InvalidInput, NoteStore
from memory.errors import StoreUnavailable
from memory.policy.redaction import mask_known
from memory.stores.actions import ActionLog
from memory.stores.conversations import ConversationLog, LogEntry
from memory.stores.events import EventLog
from memory.stores.proposals import Proposal
from memory.stores.slips import ModelSlips
from memory.stores.turn_reads import TurnReading, TurnReads
from skills.types import SkillError

_log = logging.getLogger(__name__)

# How often a turn tries to record itself while the store fails (about 1.5 s in all).
RECORD_TRIES = 3


@dataclass(frozen=True, slots=True)
class TurnResult:
    reply: str
    prompt_prefix: str
    rounds: int
    offline: bool
    awaiting: int | None = None  # a proposal the turn waits for; the reply comes later


class AwaitingApproval(Exception):
    """A tool needs a person's decision; the turn is saved in the proposal and ends here."""

    def __init__(self, proposal: Proposal) -> None:
        super().__init__(f"waiting for proposal {proposal.id}")
        self.proposal = proposal


class Agent:
    """Runs model turns with memory and tools."""

    def __init__(
        self,
        settings: Settings,
        *,
        model: Model,
        notes: NoteStore,
        log: ConversationLog,
        reads: TurnReads,
        skills: SkillUse,
        toolbox: Toolbox,
        events: EventLog | None = None,
        actions: ActionLog | None = None,
        slips: ModelSlips | None = None,
        mcp: McpServers | None = None,
    ) -> None:
        self.settings = settings
        self.mcp = mcp  # a daemon's servers: a turn waits for their first connection try
        self.actions = actions
        self.model = model
        self.notes = notes
        self.log = log
        self.skills = skills
        self.toolbox = toolbox
        self.events = events
        self.secrets = tuple(settings.secrets())  # never in a reply, a row or a log line
        self.held = HeldCalls(self.secrets)
        self.slips = Slips(slips, max_mistakes=settings.bot.max_tool_mistakes)
        self.recall = Recall(settings, notes, log)
        self.reads = reads
        self.history = History(settings, model, log, notes.clock)

    def build_prefix(
        self, ctx: TurnContext, reading: TurnReading, days: Sequence[date]
    ) -> tuple[str, int]:
        """The stable system prompt and how many bytes of it memory takes. Within the memory
        budget the long-term indexes come first, then today's log, then yesterday's."""
        indexes = reading.indexes
        public = set(ctx.visibility.public_only)
        used = sum(i.size for i in indexes)
        budget = self.settings.memory.token_budget * BYTES_PER_TOKEN - used
        daily = self.history.daily_logs(reading.daily_logs, days, budget)
        prefix = render_prefix(
            self.settings.bot.name,
            [(i, i.scope in public) for i in indexes],
            self.skills.catalog_lines(ctx.channel_scope),
            daily,
        )
        return prefix, used + sum(len(text.encode()) for _, text in daily)

    def tools(self, ctx: TurnContext) -> dict[str, Tool]:
        """The tools this turn offers the model."""
        return self.toolbox.for_turn(ctx)

    async def run(
        self, ctx: TurnContext, text: str, progress: Progress | None = None
    ) -> TurnResult:
        """Answer `text`; `progress` shows the reply as it is written and the status."""
        progress = progress or Progress()
        # What the stores hold for this turn, read together.
        days = self.history.days()
        reading = await self.reads.fetch(
            ctx.history_key, ctx.conversation.key, days, ctx.visibility
        )
        prefix, index_bytes = self.build_prefix(ctx, reading, days)
        recall = self.recall
        vector = await recall.query_vector(text)
        # Read once: the prompt leaves out what it shows, and carries it.
        stored = reading.history
        # Notes: all of them, for an answer offline.
        hits, said = await recall.fetch_both(ctx, text, stored.entries, vector)
        fresh = not_shown(hits, stored.entries)
        notices = await recall.fetch_notices(vector) if fresh or said else []
        tail = user_turn(text, fresh, recall.budget(index_bytes), said, notices)
        # Kept as the model reads it now, recall included, for the next turns' prompts.
        question = LogEntry(
            "user", text, user_scope(ctx.author), ctx.author.name, "" if tail == text else tail
        )
        try:
            history = await self.history.fetch_messages(ctx, prefix, stored)
            active = self.skills.active_messages(ctx.conversation.key, reading.active_skills)
            messages = [{"role": "system", "content": prefix}, *active, *history]
            messages += await servers_unavailable(self.mcp)
            turn = Turn([*messages, {"role": "user", "content": tail}], tools=self.tools(ctx))
            reply, rounds = await self._loop(ctx, turn, progress)
            outcome, written = "answered", turn.said
        except ModelUnavailable as exc:
            # The fix names the setting to change (e.g. a context too small for the prompt).
            log = _log.warning if exc.kind == "too_long" else _log.info
            log("answering offline: %s%s", exc, f"; {exc.fix}" if exc.fix else "")
            if exc.kind == "unreadable":  # e.g. a small model's call it never finished
                await self.slips.count(UNREADABLE, ctx.history_key, str(exc))
            reply, rounds, outcome = offline_answer(hits, notice_for(exc)), 0, "offline"
            written = ""
        except AwaitingApproval as waiting:
            await self._log(ctx, question)
            metrics.TURNS.labels("awaiting approval").inc()
            return TurnResult("", prefix, turn.round, offline=False, awaiting=waiting.proposal.id)
        # The question and its answer are written together, in one transaction.
        await self._log(ctx, question, self._reply_entry(reply, written))
        metrics.TURNS.labels(outcome).inc()
        return TurnResult(reply, prefix, rounds, offline=outcome == "offline")

    async def resume(
        self, proposal: Proposal, saved: SuspendedTurn, progress: Progress | None = None
    ) -> TurnResult | None:
        """Continue the turn `saved` in `proposal`, now that a person decided it."""
        progress = progress or Progress()
        if proposal.status not in get_kind(proposal.kind).resumes_on:
            return None
        ctx = saved.context()
        turn = Turn.resumed(saved, self.held, self.tools(ctx))
        name = saved.tool
        tool = await self.toolbox.wait_for(
            name, connect_wait(self.settings.mcp, self.toolbox, name)
        )
        outcome: ToolResult
        if tool is None:
            outcome = await self._tool_gone(name, proposal)
        else:
            outcome = await tool.resume(ctx, proposal)
            if proposal.status == "approved" and tool.kind is Kind.ACTION:
                await self._capture(ctx, tool, proposal.payload.get("arguments", {}), outcome)
        turn.tell(name, outcome)
        # The decision may have activated a skill (and its scripts): offer what is active now.
        await self.skills.fetch_active(ctx.conversation.key)
        turn.tools = self.tools(ctx)
        try:  # first the calls that came after the suspended one
            reply, rounds = await self._loop(ctx, turn, progress, resumed=True)
        except ModelUnavailable:
            reply, rounds = f"{OFFLINE_NOTICE} I could not finish that answer.", turn.round
        except AwaitingApproval as waiting:
            return TurnResult("", "", turn.round, offline=False, awaiting=waiting.proposal.id)
        await self._log(ctx, self._reply_entry(reply, turn.said))
        return TurnResult(reply, saved.messages[0]["content"], rounds, offline=False)

    async def _tool_gone(self, name: str, proposal: Proposal) -> ToolError:
        """The decided tool is not available: the proposal's kind records it as not run."""
        if self.actions is not None:
            await get_kind(proposal.kind).tool_gone(proposal, name, self.actions)
        return ToolError(f"the tool {name} is not available, so it was not run")

    def _reply_entry(self, reply: str, said: str = "") -> LogEntry:
        """The reply as posted, with the model's own words (`Turn.said`) when they differ
        only by the whitespace around them. A reply cut, masked or shown with its thinking
        goes back to the model as the person saw it."""
        prompt = said if said != reply and said.strip() == reply else ""
        return LogEntry("assistant", reply, "", self.settings.bot.name, prompt)

    async def _log(self, ctx: TurnContext, *entries: LogEntry) -> None:
        """Write messages to the conversation's history; a reply carries the link of the
        message it answers. While the store fails, tried again for a moment; then the record
        is given up, not the answer: the person still gets it."""
        backoff = Backoff(0.25, 1.0)
        for attempt in range(1, RECORD_TRIES + 1):
            try:
                await self.log.append(
                    ctx.history_key, entries, scope=ctx.message_scope, link=ctx.link
                )
                return
            except StoreUnavailable as exc:
                stop_if_asked()
                if attempt == RECORD_TRIES:
                    _log.error(
                        "answered in %s without keeping the turn in its history: %s",
                        ctx.conversation.key,
                        exc,
                    )
                    return
                await asyncio.sleep(backoff.next_delay())

    async def _loop(
        self, ctx: TurnContext, turn: Turn, progress: Progress, *, resumed: bool = False
    ) -> tuple[str, int]:
        """The model's rounds until it answers; a turn `resumed` after a card first runs the
        calls of its round that came after the suspended one."""
        try:
            if resumed:
                await self._runpending_call(ctx, turn)
                turn.round += 1
            return await self._rounds(ctx, turn, progress)
        except GiveUp as stop:
            limit = self.settings.bot.max_reply_chars
            answer = await self.slips.gave_up(ctx.history_key, turn, stop, self.secrets, limit)
            return answer, turn.round

    async def _rounds(self, ctx: TurnContext, turn: Turn, progress: Progress) -> tuple[str, int]:
        max_rounds = self.settings.bot.max_tool_rounds
        while True:
            last = turn.round >= max_rounds
            specs = None if last else self.toolbox.specs(turn.tools)
            result = await self.model.chat(
                turn.messages, tools=specs, on_content=progress.on_content
            )
            self._log_thinking(result)
            if not result.tool_calls:
                if not result.content.strip():  # nothing to post: ask once more, then give up
                    await self.slips.ask_again(ctx.history_key, turn, result)
                    continue
                if not last and await self.slips.nudge_intent(ctx.history_key, turn, result):
                    await progress.retry()  # the announcement gives way to what comes next
                    continue
                turn.said = result.content
                return self._answer(result), turn.round
            if last:
                raise GiveUp(f"my model was still calling tools after {max_rounds} rounds")
            await progress.tools_called([call.name for call in result.tool_calls])
            turn.messages.append(
                {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [echo(c) for c in result.tool_calls],
                }
            )
            turn.pending = [pending_call(c) for c in result.tool_calls]
            await self._runpending_call(ctx, turn)
            turn.round += 1

    async def _runpending_call(self, ctx: TurnContext, turn: Turn) -> None:
        """Run the round's calls in order, at most `max_tool_calls_per_round` of them; the
        count comes from the messages, so it holds across a turn resumed after a card."""
        limit = self.settings.bot.max_tool_calls_per_round
        while turn.pending:
            call = turn.pending.pop(0)
            name = "" if isinstance(call, BrokenCall) else call.name
            output: Told
            if calls_this_round(turn.messages) >= limit:
                output = ToolError(f"too many tool calls in one round; at most {limit} run")
            elif isinstance(call, BrokenCall):
                output = await self.slips.mistake(ctx.history_key, turn, ToolError(call.problem))
            else:
                repeated = await self.slips.repeated(ctx.history_key, turn, name, call.arguments)
                output = repeated or await self._run_tool(ctx, name, call.arguments, turn)
            outcome = "error" if isinstance(output, ToolError) else "ok"
            metrics.TOOL_CALLS.labels(metrics.tool_label(name, self.toolbox.names), outcome).inc()
            turn.tell(name, output)

    def _answer(self, result: ChatResult) -> str:
        """The reply to post and keep, cut to `max_reply_chars`; the model's thinking only
        when configured to show it."""
        answer = result.content.strip()  # never empty: `ask_again` saw to that
        if self.settings.model_server.show_thinking and result.thinking.strip():
            quoted = "\n".join(f"> {line}" for line in result.thinking.strip().splitlines())
            answer = f"> 💭 thinking\n{quoted}\n\n{answer}"
        # Cut once, here, so what is posted and what history keeps are the same text.
        return clip_reply(mask_known(answer, self.secrets), self.settings.bot.max_reply_chars)

    def _log_thinking(self, result: ChatResult) -> None:
        if result.thinking:
            _log.debug("model thinking: %s", result.thinking)

    async def _run_tool(self, ctx: TurnContext, name: str, raw: Any, turn: Turn) -> ToolResult:
        """The tool's output, or an error the model can correct."""
        conversation = ctx.history_key
        tool = turn.tools.get(name)
        if tool is None:
            known = self.toolbox.get(name)
            if known is not None and known.writes_memory and ctx.read_only:
                return ToolError(
                    f"{name} is not available here: this channel's memory is read-only"
                )
            available = ", ".join(turn.tools)
            error = f"there is no tool named {clip_name(name)!r}; available tools: {available}"
            return await self.slips.mistake(conversation, turn, ToolError(error))
        cards = self.settings.bot.max_cards_per_turn
        proposing = self.toolbox.names_of(Kind.PROPOSAL)
        if tool.kind is Kind.PROPOSAL and cards_this_turn(turn, proposing) >= cards:
            return ToolError(
                f"at most {cards} cards can be shown in one turn; tell the person "
                "what else you would propose instead"
            )
        try:
            arguments = tool.parse(raw)
            call = Call(ctx, lambda: turn.saved(ctx, name, self.held))
            # A tool that bounds itself (an action: the server's timeout) is never cut off
            # mid-run by the turn's timeout, which would leave its outcome untold.
            timeout = None if tool.bounds_itself else self.settings.bot.tool_timeout_s
            async with asyncio.timeout(timeout):
                output = await tool.run(call, arguments)
        except (ToolArgumentError, InvalidInput, SkillError) as exc:
            return await self.slips.mistake(conversation, turn, ToolError(str(exc)))
        except TimeoutError:
            _log.warning("tool %s timed out after %s s", name, self.settings.bot.tool_timeout_s)
            return ToolError(f"{name} timed out")
        except (ModelUnavailable, ClaimLost):
            raise
        except Exception:
            # Whatever the model sends must not fail the turn: log it, tell the model.
            _log.exception("tool %s failed", name)
            return ToolError(f"{name} failed unexpectedly")
        if isinstance(output, Suspend):
            raise AwaitingApproval(output.proposal)
        await self._capture(ctx, tool, arguments, output)
        return output

    async def _capture(
        self, ctx: TurnContext, tool: Tool, arguments: dict[str, Any], output: ToolResult
    ) -> None:
        """Calls that show a card or act are captured for pattern extraction; reads never
        are. A suspended call is captured when its card is decided."""
        if self.events is None or tool.kind is Kind.READ or isinstance(output, ToolError):
            return
        await self.events.capture(
            tool.name,
            arguments,
            outcome=output.text[:200],
            conversation=dataclasses.asdict(ctx.conversation),
            channel_scope=ctx.channel_scope,
            person=user_scope(ctx.author),
        )
