"""One agent turn: assemble the prompt, call the model, run its tool calls, reply.

The model never writes memory: its proposing tools create proposals that a person
approves on a card. Tool calls are validated, time-limited and bounded in number; a
broken call is answered to the model as an error it can correct.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from adapters.base import ConversationRef, UserRef
from bot import metrics
from bot.approvals import ApprovalService
from bot.config import Settings
from bot.model import ChatResult, Model, ModelUnavailable, ToolCall
from bot.prompt import BYTES_PER_TOKEN, estimate_tokens, render_prefix, user_turn
from bot.skill_use import SkillUse, skill_tool_result
from bot.split import clip_reply
from bot.tool_args import (
    PROPOSAL_TOOLS,
    WRITE_TOOLS,
    LoadSkillArgs,
    MemoryReadArgs,
    MemorySearchArgs,
    ProposeForgetArgs,
    ProposeNoteArgs,
    ProposeSkillArgs,
    ReadSkillResourceArgs,
    ToolArgumentError,
    parse_arguments,
    tool_specs,
)
from memory import (
    Category,
    InvalidInput,
    Note,
    NoteDraft,
    NoteStore,
    Scope,
    SearchHit,
    Viewer,
    Visibility,
    visibility_for,
)
from memory.conversations import ConversationLog, LogEntry
from memory.events import EventLog, is_write_action
from memory.fts import term_overlap
from memory.proposals import Proposal
from memory.types import ScopeKind
from skills.types import SkillError

_log = logging.getLogger(__name__)

COMPACT_AT = 0.8
# Past messages a memory_search shows, and how much of each.
MESSAGE_HITS = 5
MESSAGE_CHARS = 300
OFFLINE_NOTICE = "⚠️ My model is unreachable right now, so I can only share what I remember."


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Who is asking, where, and what they may read and change."""

    conversation: ConversationRef
    author: UserRef
    visibility: Visibility
    read_only: bool
    link: str = ""

    @property
    def message_scope(self) -> str:
        """Who may search this conversation's messages: its channel, or the DM's person."""
        return self.author.scope if self.conversation.is_dm else self.conversation.channel_scope

    @property
    def history_key(self) -> str:
        """One conversation's history: a channel thread, or a DM (marked, for reflection)."""
        thread = self.conversation.thread_id or ""
        marker = "dm:" if self.conversation.is_dm else ""
        return f"{marker}{self.conversation.key}/{thread}"

    @property
    def channel_scope(self) -> str | None:
        return None if self.conversation.is_dm else self.conversation.channel_scope

    def writable(self) -> tuple[Scope, ...]:
        """Scopes a person may propose changes to from here (team notes are admin-only)."""
        return tuple(s for s in self.visibility.scopes if s.kind is not ScopeKind.TEAM)


def make_context(
    conversation: ConversationRef, author: UserRef, read_only: bool, link: str = ""
) -> TurnContext:
    """The turn context of a person in a conversation; isolation comes from `visibility_for`."""
    speaker = Scope(ScopeKind.USER, author.platform, author.id)
    channel = None if conversation.is_dm else Scope.parse(conversation.channel_scope)
    team = Scope.parse(conversation.team_scope) if conversation.team_scope else None
    viewer = Viewer(speaker, channel, team)
    return TurnContext(conversation, author, visibility_for(viewer), read_only, link)


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


@dataclass(slots=True)
class _Turn:
    """A turn in flight: its messages, the tool calls of the current round still to run,
    and the tools it offers (worked out once per turn; not saved)."""

    messages: list[dict[str, Any]]
    round: int = 1
    pending: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    tools: tuple[dict[str, Any], ...] = ()

    @property
    def offered(self) -> set[str]:
        return {spec["function"]["name"] for spec in self.tools}

    def saved(self, ctx: TurnContext) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "round": self.round,
            "pending": [[name, args] for name, args in self.pending],
            "conversation": dataclasses.asdict(ctx.conversation),
            "author": dataclasses.asdict(ctx.author),
            "read_only": ctx.read_only,
        }


class Agent:
    """Runs model turns with memory and tools."""

    def __init__(
        self,
        settings: Settings,
        model: Model,
        notes: NoteStore,
        log: ConversationLog,
        approvals: ApprovalService,
        skills: SkillUse,
        events: EventLog | None = None,
    ) -> None:
        self.settings = settings
        self.model = model
        self.notes = notes
        self.log = log
        self.approvals = approvals
        self.skills = skills
        self.events = events

    async def build_prefix(self, ctx: TurnContext) -> tuple[str, int]:
        """The stable system prompt and how many bytes of it memory takes. Within the memory
        budget the long-term indexes come first, then today's log, then yesterday's."""
        indexes = await self.notes.indexes_for(ctx.visibility)
        public = set(ctx.visibility.public_only)
        used = sum(i.size for i in indexes)
        daily = await self.daily_logs(
            ctx, self.settings.memory.token_budget * BYTES_PER_TOKEN - used
        )
        prefix = render_prefix(
            self.settings.bot.name,
            [(i, i.scope in public) for i in indexes],
            self.skills.catalog_lines(ctx.channel_scope),
            daily,
        )
        return prefix, used + sum(len(text.encode()) for _, text in daily)

    async def daily_logs(self, ctx: TurnContext, budget: int) -> list[tuple[str, str]]:
        tz = ZoneInfo(self.settings.jobs.timezone)
        today = self.notes.clock().astimezone(tz).date()
        days = [("today", today), ("yesterday", today - timedelta(days=1))]
        found = await self.log.daily_logs(ctx.history_key, [day for _, day in days])
        logs = []
        for label, day in days:
            text = found.get(day, "")
            if not text or budget <= 0:
                continue
            clipped = text.encode()[:budget].decode(errors="ignore")
            logs.append((f"{label} ({day.isoformat()})", clipped))
            budget -= len(clipped.encode())
        return logs

    def tools(self, ctx: TurnContext) -> tuple[dict[str, Any], ...]:
        has_skills = bool(self.skills.catalog_lines(ctx.channel_scope))
        return tool_specs(read_only=ctx.read_only, skills=has_skills)

    async def recall(self, ctx: TurnContext, text: str) -> list[SearchHit]:
        """Notes for the message; a reflection only when it clearly concerns the message."""
        hits = await self.notes.search(
            text, ctx.visibility, k=self.settings.memory.recall_k, snippets=False
        )
        gate = self.settings.jobs.reflection_min_overlap
        return [
            hit
            for hit in hits
            if hit.note.category is not Category.REFLECTION
            or term_overlap(text, f"{hit.note.summary} {hit.note.body}") >= gate
        ]

    def recall_budget(self, index_bytes: int) -> int:
        """Bytes left for recalled notes once the indexes took their share of the budget."""
        return max(0, self.settings.memory.token_budget * BYTES_PER_TOKEN - index_bytes)

    async def run(self, ctx: TurnContext, text: str) -> TurnResult:
        prefix, index_bytes = await self.build_prefix(ctx)
        hits = await self.recall(ctx, text)
        tail = user_turn(text, hits, self.recall_budget(index_bytes))
        question = LogEntry("user", text, ctx.author.scope, ctx.author.name)
        try:
            history = await self._history_messages(ctx, prefix)
            active = await self.skills.active_messages(ctx.conversation.key)
            messages = [{"role": "system", "content": prefix}, *active, *history]
            turn = _Turn(messages, tools=self.tools(ctx))
            turn.messages.append({"role": "user", "content": tail})
            reply, rounds = await self._loop(ctx, turn)
            outcome = "answered"
        except ModelUnavailable as exc:
            _log.info("answering offline: %s", exc)
            reply, rounds, outcome = offline_answer(hits), 0, "offline"
        except AwaitingApproval as waiting:
            await self._log(ctx, question)
            metrics.TURNS.labels("awaiting approval").inc()
            return TurnResult("", prefix, turn.round, offline=False, awaiting=waiting.proposal.id)
        # The question and its answer are written together, in one transaction.
        await self._log(ctx, question, self._reply_entry(reply))
        metrics.TURNS.labels(outcome).inc()
        return TurnResult(reply, prefix, rounds, offline=outcome == "offline")

    async def resume(self, proposal: Proposal) -> TurnResult | None:
        """Continue the turn that asked for `proposal`, now that a person decided it."""
        saved = proposal.payload.get("turn")
        if not saved or proposal.status not in ("approved", "rejected"):
            return None
        ctx = make_context(
            ConversationRef(**saved["conversation"]), UserRef(**saved["author"]), saved["read_only"]
        )
        pending = [tuple(p) for p in saved["pending"]]
        turn = _Turn(saved["messages"], saved["round"], pending, self.tools(ctx))
        outcome = await self._load_outcome(ctx, proposal)
        turn.messages.append({"role": "tool", "tool_name": "load_skill", "content": outcome})
        try:
            await self._run_pending(ctx, turn)  # the calls that came after the load
            turn.round += 1
            reply, rounds = await self._loop(ctx, turn)
        except ModelUnavailable:
            reply, rounds = f"{OFFLINE_NOTICE} I could not finish that answer.", turn.round
        except AwaitingApproval as waiting:
            return TurnResult("", "", turn.round, offline=False, awaiting=waiting.proposal.id)
        await self._log(ctx, self._reply_entry(reply))
        return TurnResult(reply, saved["messages"][0]["content"], rounds, offline=False)

    def _reply_entry(self, reply: str) -> LogEntry:
        return LogEntry("assistant", reply, "", self.settings.bot.name)

    async def _log(self, ctx: TurnContext, *entries: LogEntry) -> None:
        """Write messages to the conversation's history; a reply carries the link of the
        message it answers."""
        await self.log.append(ctx.history_key, entries, scope=ctx.message_scope, link=ctx.link)

    async def _load_outcome(self, ctx: TurnContext, proposal: Proposal) -> str:
        name = proposal.payload["name"]
        if proposal.status != "approved":
            return f"the person declined loading the skill {name}; continue without it"
        skill = self.skills.catalog.get(name)
        if skill is None or skill.sha256 != proposal.payload["sha256"]:
            return f"error: the skill {name} changed or disappeared since it was approved"
        await self.skills.activate(ctx.conversation.key, skill, proposal.decided_by or "")
        return skill_tool_result(skill)

    async def _loop(self, ctx: TurnContext, turn: _Turn) -> tuple[str, int]:
        max_rounds = self.settings.bot.max_tool_rounds
        while True:
            last = turn.round >= max_rounds
            result = await self.model.chat(turn.messages, tools=None if last else turn.tools)
            self._log_thinking(result)
            if not result.tool_calls:
                return self._answer(result), turn.round
            if last:
                return "I could not finish that within my tool-call limit.", turn.round
            turn.messages.append(
                {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [_echo(c) for c in result.tool_calls],
                }
            )
            turn.pending = [_pending(c) for c in result.tool_calls]
            await self._run_pending(ctx, turn)
            turn.round += 1

    async def _run_pending(self, ctx: TurnContext, turn: _Turn) -> None:
        """Run the round's calls in order, at most `max_tool_calls_per_round` of them; the
        count comes from the messages, so it holds across a turn resumed after a card."""
        limit = self.settings.bot.max_tool_calls_per_round
        while turn.pending:
            name, arguments = turn.pending.pop(0)
            if _calls_this_round(turn.messages) >= limit:
                output = f"error: too many tool calls in one round; at most {limit} run"
            else:
                output = await self._run_tool(ctx, name, arguments, turn)
            outcome = "error" if output.startswith("error") else "ok"
            metrics.TOOL_CALLS.labels(metrics.tool_label(name), outcome).inc()
            turn.messages.append({"role": "tool", "tool_name": name, "content": output})

    def _answer(self, result: ChatResult) -> str:
        """The reply to post and keep, cut to `max_reply_chars`; the model's thinking only
        when configured to show it."""
        answer = result.content.strip() or "(no answer)"
        if self.settings.ollama.show_thinking and result.thinking.strip():
            quoted = "\n".join(f"> {line}" for line in result.thinking.strip().splitlines())
            answer = f"> 💭 thinking\n{quoted}\n\n{answer}"
        # Cut once, here, so what is posted and what history keeps are the same text.
        return clip_reply(answer, self.settings.bot.max_reply_chars)

    def _log_thinking(self, result: ChatResult) -> None:
        if result.thinking:
            _log.debug("model thinking: %s", result.thinking)

    async def _run_tool(self, ctx: TurnContext, name: str, raw: Any, turn: _Turn) -> str:
        """The tool's output, or an error the model can correct; a nameless call carries
        what was wrong with it (see `_pending`)."""
        if not name:
            return f"error: {raw}"
        offered = turn.offered
        if name not in offered:
            if name in WRITE_TOOLS:
                return f"error: {name} is not available here: this channel's memory is read-only"
            available = ", ".join(sorted(offered))
            return f"error: there is no tool named {_clip(name)!r}; available tools: {available}"
        cards = self.settings.bot.max_cards_per_turn
        if name in PROPOSAL_TOOLS and _cards_this_turn(turn.messages) >= cards:
            return (
                f"error: at most {cards} cards can be shown in one turn; tell the person "
                "what else you would propose instead"
            )
        try:
            args = parse_arguments(name, raw)
            async with asyncio.timeout(self.settings.bot.tool_timeout_s):
                output = await self._execute(ctx, args, turn)
            await self._capture(ctx, name, args, output)
            return output
        except (ToolArgumentError, InvalidInput, SkillError) as exc:
            return f"error: {exc}"
        except TimeoutError:
            _log.warning("tool %s timed out after %s s", name, self.settings.bot.tool_timeout_s)
            return f"error: {name} timed out"
        except (AwaitingApproval, ModelUnavailable):
            raise
        except Exception:
            # Whatever the model sends must not fail the turn: log it, tell the model.
            _log.exception("tool %s failed", name)
            return f"error: {name} failed unexpectedly"

    async def _memory_search(self, ctx: TurnContext, query: str, limit: int) -> str:
        """Notes, then past messages of this conversation's scope, each with its link."""
        vectors = self.notes.vectors
        vector = await vectors.query_vector(query) if vectors is not None else None
        hits = await self.notes.search(query, ctx.visibility, k=limit, vector=vector)
        said = await self.log.search(
            query, ctx.visibility, k=min(limit, MESSAGE_HITS), vectors=vectors, vector=vector
        )
        if not hits and not said:
            return "no notes or past messages found"
        lines = [f"- [{h.note.scope}] {h.note.topic}: {h.snippet}" for h in hits]
        if said:
            lines.append("past messages:")
        for m in said:
            where = f" ({m.link})" if m.link else ""
            text = " ".join(m.content.split())[:MESSAGE_CHARS]
            lines.append(f"- {m.created_at[:16].replace('T', ' ')} {m.author_name}: {text}{where}")
        return "\n".join(lines)

    async def _capture(self, ctx: TurnContext, name: str, arguments: Any, output: str) -> None:
        """Successful tools whose name is a write verb are captured for pattern extraction."""
        if self.events is None or not is_write_action(name):
            return
        await self.events.capture(
            name, arguments.model_dump(), outcome=output[:200],
            conversation=dataclasses.asdict(ctx.conversation),
            channel_scope=ctx.channel_scope, person=ctx.author.scope,
        )  # fmt: skip

    async def _execute(self, ctx: TurnContext, args: Any, turn: _Turn) -> str:
        if isinstance(args, MemoryReadArgs):
            notes = await self.notes.read(ctx.visibility, args.topic)
            if not notes:
                return f"no note named {args.topic!r} is visible here; try memory_search"
            return "\n\n".join(
                f"[{n.scope}] {n.topic}: {n.summary}\n{n.body}".rstrip() for n in notes
            )
        if isinstance(args, MemorySearchArgs):
            return await self._memory_search(ctx, args.query, args.limit)
        if isinstance(args, ProposeNoteArgs):
            draft = self.draft_for(ctx, args.topic, args.summary, args.body, args.scope == "user")
            proposal = await self.approvals.propose_save(ctx.conversation, ctx.author, draft)
            return (
                f"proposal #{proposal.id} is shown to the person as a card; the note is saved "
                "only if they approve it with ✅. Tell them so briefly."
            )
        if isinstance(args, ProposeForgetArgs):
            note = await self.find_writable(ctx, args.topic)
            if note is None:
                return f"no note {args.topic!r} that this person may change is visible here"
            proposal = await self.approvals.propose_forget(ctx.conversation, ctx.author, note)
            return f"proposal #{proposal.id} to forget {note.topic} is shown as a card"
        if isinstance(args, LoadSkillArgs):
            skill = self.skills.find(args.name, ctx.channel_scope, by_person=False)
            if await self.skills.is_active(ctx.conversation.key, skill):
                return skill_tool_result(skill)
            proposal = await self.approvals.propose_skill_load(
                ctx.conversation, ctx.author, skill, self.skills.load_card_lines(skill),
                turn.saved(ctx),
            )  # fmt: skip
            raise AwaitingApproval(proposal)
        if isinstance(args, ReadSkillResourceArgs):
            return await self.skills.read(
                ctx.conversation.key, args.skill, args.path, ctx.channel_scope
            )
        if isinstance(args, ProposeSkillArgs):
            name = self.skills.new_skill_name(args.name)  # before any card is posted
            text = self.skills.draft_skill(
                name, args.description, args.body, ctx.author.scope, ctx.conversation.key
            )
            proposal = await self.approvals.propose_skill_create(
                ctx.conversation, ctx.author, name, text
            )
            return f"proposal #{proposal.id} shows the whole skill on a card for approval"
        raise AssertionError(f"unhandled tool arguments {args!r}")

    def draft_for(
        self, ctx: TurnContext, topic: str, summary: str, body: str, about_self: bool
    ) -> NoteDraft:
        """Where a note goes: in a DM the person's private notes; in a channel the channel's,
        unless it is about the person, which makes a user note that may show in channels."""
        speaker = Scope(ScopeKind.USER, ctx.author.platform, ctx.author.id)
        if ctx.conversation.is_dm:
            return NoteDraft(speaker, topic, summary, body, private=True, author=ctx.author.scope)
        if about_self:
            return NoteDraft(speaker, topic, summary, body, private=False, author=ctx.author.scope)
        channel = Scope.parse(ctx.conversation.channel_scope)
        return NoteDraft(channel, topic, summary, body, author=ctx.author.scope)

    async def find_writable(self, ctx: TurnContext, what: str) -> Note | None:
        """The note `what` names (a topic, or else the best search hit) among the notes this
        person may change from here."""
        writable = set(ctx.writable())
        for note in await self.notes.read(ctx.visibility, what.strip().lower()):
            if note.scope in writable:
                return note
        for hit in await self.notes.search(what, ctx.visibility, k=10, bump=False):
            if hit.note.scope in writable:
                return hit.note
        return None

    async def _history_messages(self, ctx: TurnContext, prefix: str) -> list[dict[str, Any]]:
        """Earlier turns, compacted into a stored summary past 80% of the context."""
        history = await self.log.history(ctx.history_key)
        entries = list(history.entries)
        budget = int(self.model.info.context_length * COMPACT_AT)
        used = estimate_tokens(prefix) + estimate_tokens(history.summary)
        used += sum(estimate_tokens(e.content) for e in entries)
        summary = history.summary
        if used > budget and len(entries) >= 2:
            older, entries = entries[: len(entries) // 2], entries[len(entries) // 2 :]
            summary = await self._summarise(summary, older)
            await self.log.compact(ctx.history_key, older[-1].id, summary)
        messages: list[dict[str, Any]] = []
        if summary:
            messages.append(
                {"role": "system", "content": f"Earlier in this conversation: {summary}"}
            )
        messages += [{"role": e.role, "content": e.content} for e in entries]
        return messages

    async def _summarise(self, previous: str, entries: Sequence[Any]) -> str:
        transcript = "\n".join(f"{e.role}: {e.content}" for e in entries)
        prompt = (
            "Summarise this conversation in a few sentences, keeping names, decisions and "
            f"open questions.\n\nEarlier summary: {previous or '(none)'}\n\n{transcript}"
        )
        try:
            result = await self.model.chat([{"role": "user", "content": prompt}])
            return result.content.strip()
        except ModelUnavailable:
            return (previous + " " + transcript)[-2000:].strip()


def offline_answer(hits: Sequence[SearchHit]) -> str:
    if not hits:
        return f"{OFFLINE_NOTICE} I found nothing in my notes about that."
    lines = [f"• `{h.note.topic}`: {h.note.summary}" for h in hits]
    return f"{OFFLINE_NOTICE} These notes may help:\n" + "\n".join(lines)


def _as_object(arguments: Any) -> Any:
    return arguments if isinstance(arguments, dict) else {"raw": str(arguments)}


def _echo(call: ToolCall) -> dict[str, Any]:
    """A call as the next request shows it to the model; a malformed one without arguments."""
    arguments = {} if call.problem else _as_object(call.arguments)
    return {"function": {"name": call.name, "arguments": arguments}}


def _pending(call: ToolCall) -> tuple[str, Any]:
    """A call still to run, as it is saved with a suspended turn: a malformed call has no
    name and carries its problem in place of arguments."""
    return ("", call.problem) if call.problem else (call.name, call.arguments)


def _clip(name: str, limit: int = 64) -> str:
    return name if len(name) <= limit else name[:limit] + "…"


def _calls_this_round(messages: Sequence[dict[str, Any]]) -> int:
    """Tool results since the model's last message: the calls of this round already run."""
    count = 0
    for message in reversed(messages):
        if message.get("role") != "tool":
            return count
        count += 1
    return count


def _cards_this_turn(messages: Sequence[dict[str, Any]]) -> int:
    """Proposal tools that ran since the person's message, each of which showed a card."""
    count = 0
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool" and message.get("tool_name") in PROPOSAL_TOOLS:
            count += not str(message.get("content", "")).startswith("error")
    return count
