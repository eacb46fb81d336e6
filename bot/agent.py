"""One agent turn: assemble the prompt, call the model, run its tool calls, reply.

The model never writes memory: its proposing tools create proposals that a person
approves on a card. Tool calls are validated, time-limited and bounded in number; a
broken call is answered to the model as an error it can correct.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.base import ConversationRef, UserRef
from bot.approvals import ApprovalService
from bot.config import Settings
from bot.model import ChatResult, Model, ModelUnavailable
from bot.prompt import BYTES_PER_TOKEN, estimate_tokens, render_prefix, user_turn
from bot.tool_args import (
    WRITE_TOOLS,
    MemoryReadArgs,
    MemorySearchArgs,
    ProposeForgetArgs,
    ProposeNoteArgs,
    ToolArgumentError,
    parse_arguments,
    tool_specs,
)
from memory import InvalidInput, Note, NoteDraft, NoteStore, Scope, SearchHit, Visibility
from memory.conversations import ConversationLog
from memory.types import ScopeKind

_log = logging.getLogger(__name__)

COMPACT_AT = 0.8
OFFLINE_NOTICE = "⚠️ My model is unreachable right now, so I can only share what I remember."


@dataclass(frozen=True, slots=True)
class TurnContext:
    """Who is asking, where, and what they may read and change."""

    conversation: ConversationRef
    author: UserRef
    visibility: Visibility
    read_only: bool

    @property
    def history_key(self) -> str:
        thread = self.conversation.thread_id or ""
        return f"{self.conversation.key}/{thread}"

    def writable(self) -> tuple[Scope, ...]:
        """Scopes a person may propose changes to from here (team notes are admin-only)."""
        return tuple(s for s in self.visibility.scopes if s.kind is not ScopeKind.TEAM)


@dataclass(frozen=True, slots=True)
class TurnResult:
    reply: str
    prompt_prefix: str
    rounds: int
    offline: bool


class Agent:
    """Runs model turns with memory and tools."""

    def __init__(
        self,
        settings: Settings,
        model: Model,
        notes: NoteStore,
        log: ConversationLog,
        approvals: ApprovalService,
    ) -> None:
        self.settings = settings
        self.model = model
        self.notes = notes
        self.log = log
        self.approvals = approvals

    async def build_prefix(self, ctx: TurnContext) -> tuple[str, int]:
        """The stable system prompt and how many bytes of it the memory indexes take."""
        indexes = await self.notes.indexes_for(ctx.visibility)
        public = set(ctx.visibility.public_only)
        prefix = render_prefix(self.settings.bot.name, [(i, i.scope in public) for i in indexes])
        return prefix, sum(i.size for i in indexes)

    async def recall(self, ctx: TurnContext, text: str) -> list[SearchHit]:
        return await self.notes.search(text, ctx.visibility, k=self.settings.memory.recall_k)

    def recall_budget(self, index_bytes: int) -> int:
        """Bytes left for recalled notes once the indexes took their share of the budget."""
        return max(0, self.settings.memory.token_budget * BYTES_PER_TOKEN - index_bytes)

    async def run(self, ctx: TurnContext, text: str) -> TurnResult:
        prefix, index_bytes = await self.build_prefix(ctx)
        hits = await self.recall(ctx, text)
        tail = user_turn(text, hits, self.recall_budget(index_bytes))
        await self.log.append(ctx.history_key, "user", text, ctx.author.scope)
        try:
            history = await self._history_messages(ctx, prefix)
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": prefix},
                *history,
                {"role": "user", "content": tail},
            ]
            reply, rounds = await self._loop(ctx, messages)
            offline = False
        except ModelUnavailable as exc:
            _log.info("answering offline: %s", exc)
            reply, rounds, offline = offline_answer(hits), 0, True
        await self.log.append(ctx.history_key, "assistant", reply)
        return TurnResult(reply, prefix, rounds, offline)

    async def _loop(self, ctx: TurnContext, messages: list[dict[str, Any]]) -> tuple[str, int]:
        tools = tool_specs(read_only=ctx.read_only)
        max_rounds = self.settings.bot.max_tool_rounds
        for round_number in range(1, max_rounds + 1):
            last = round_number == max_rounds
            result = await self.model.chat(messages, tools=None if last else tools)
            self._log_thinking(result)
            if not result.tool_calls:
                return result.content.strip() or "(no answer)", round_number
            messages.append(
                {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [
                        {"function": {"name": c.name, "arguments": _as_object(c.arguments)}}
                        for c in result.tool_calls
                    ],
                }
            )
            for call in result.tool_calls:
                output = await self._run_tool(ctx, call.name, call.arguments)
                messages.append({"role": "tool", "tool_name": call.name, "content": output})
        return (
            "I could not finish that within my tool-call limit; please ask more simply.",
            max_rounds,
        )

    def _log_thinking(self, result: ChatResult) -> None:
        if result.thinking:
            _log.debug("model thinking: %s", result.thinking)

    async def _run_tool(self, ctx: TurnContext, name: str, raw: Any) -> str:
        offered = {spec["function"]["name"] for spec in tool_specs(read_only=ctx.read_only)}
        if name not in offered:
            if name in WRITE_TOOLS:
                return f"error: {name} is not available here: this channel's memory is read-only"
            available = ", ".join(sorted(offered))
            return f"error: there is no tool named {name!r}; available tools: {available}"
        try:
            args = parse_arguments(name, raw)
            async with asyncio.timeout(self.settings.bot.tool_timeout_s):
                return await self._execute(ctx, args)
        except ToolArgumentError as exc:
            return f"error: {exc}"
        except InvalidInput as exc:
            return f"error: {exc}"
        except TimeoutError:
            _log.warning("tool %s timed out after %s s", name, self.settings.bot.tool_timeout_s)
            return f"error: {name} timed out"

    async def _execute(self, ctx: TurnContext, args: Any) -> str:
        if isinstance(args, MemoryReadArgs):
            notes = await self.notes.read(ctx.visibility, args.topic)
            if not notes:
                return f"no note named {args.topic!r} is visible here; try memory_search"
            return "\n\n".join(
                f"[{n.scope}] {n.topic}: {n.summary}\n{n.body}".rstrip() for n in notes
            )
        if isinstance(args, MemorySearchArgs):
            hits = await self.notes.search(args.query, ctx.visibility, k=args.limit)
            if not hits:
                return "no notes found"
            return "\n".join(f"- [{h.note.scope}] {h.note.topic}: {h.snippet}" for h in hits)
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
        entries = list(history.entries[:-1])  # the last entry is this turn's message
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
