"""The command router: deterministic commands first, anything else is an agent turn."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping

from pydantic import BaseModel

from adapters.base import Adapter, ConversationRef, Message, working
from bot.agent import Agent
from bot.approvals import ApprovalService, scope_label
from bot.commands import HELP_TEXT, Forget, Help, Recall, Remember, Undo, parse_command
from bot.config import Settings
from bot.model import ModelUnavailable
from bot.split import split_message
from bot.structured import InvalidModelOutput, ask_structured
from bot.turn_context import TurnContext, draft_for, find_writable, free_topic, make_context
from memory import InvalidInput, NoteStore, NotFound
from memory.proposals import Proposal
from memory.types import (
    GENERIC_WORDS,
    SUMMARY_MAX_CHARS,
    hashed_topic,
    is_generic,
    slug_words,
    slugify,
    validate_topic,
)
from skills.types import SkillError

_log = logging.getLogger(__name__)

SKILL_COMMAND = re.compile(r"^/([^\s/]+)(?:\s+(.*))?$", re.DOTALL)
# `remember that` with nothing after it parses as the text "that".
_NOTHING_TO_REMEMBER = re.compile(r"^(?:that\b)?[\W_]*$", re.IGNORECASE)


class NoteTitle(BaseModel):
    """What the model proposes as a note's topic and summary (structured output)."""

    topic: str
    summary: str


def derived_topic(text: str) -> str:
    """A topic without the model: the first four words of `text` that name something, or a
    hash of the text when none does (only numbers, or a script slugs cannot spell)."""
    words = [w for w in dict.fromkeys(slug_words(text)) if w not in GENERIC_WORDS][:4]
    return hashed_topic(text) if is_generic(words) else slugify(" ".join(words))


def fallback_title(text: str) -> NoteTitle:
    """Topic and summary without the model: the first content words and the first sentence."""
    topic = derived_topic(text)
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
    limit = min(120, SUMMARY_MAX_CHARS)
    summary = first if len(first) <= limit else first[: limit - 1].rstrip() + "…"
    return NoteTitle(topic=topic, summary=summary)


class Core:
    """Handles one message: a command, or a model turn, and the reply."""

    def __init__(
        self,
        settings: Settings,
        notes: NoteStore,
        agent: Agent,
        approvals: ApprovalService,
        adapters: Mapping[str, Adapter],
    ) -> None:
        self.settings = settings
        self.notes = notes
        self.agent = agent
        self.approvals = approvals
        self.adapters = adapters
        self.read_only = frozenset(settings.bot.read_only_channels)

    def context(self, message: Message) -> TurnContext:
        conv = message.conversation
        read_only = conv.channel_scope in self.read_only
        return make_context(conv, message.author, read_only, message.link)

    async def reply(self, conversation: ConversationRef, text: str) -> None:
        adapter = self.adapters[conversation.platform]
        for chunk in split_message(text, adapter.max_message_chars):
            await adapter.send(conversation, chunk)

    async def handle(self, message: Message) -> None:
        ctx = self.context(message)
        command = parse_command(message.text)
        try:
            activation = SKILL_COMMAND.match(message.text.strip()) if command is None else None
            if activation is not None:
                await self.activate_skill(ctx, activation.group(1), activation.group(2) or "")
            elif command is None:
                await self.turn(ctx, message.text)
            elif isinstance(command, Remember):
                await self.remember(ctx, command)
            elif isinstance(command, Forget):
                await self.forget(ctx, command)
            elif isinstance(command, Undo):
                await self.undo(ctx)
            elif isinstance(command, Recall):
                await self.recall(ctx, command)
            elif isinstance(command, Help):
                await self.reply(message.conversation, HELP_TEXT)
        except (InvalidInput, SkillError) as exc:
            await self.reply(message.conversation, f"⚠️ {exc}")

    async def turn(self, ctx: TurnContext, text: str) -> None:
        adapter = self.adapters[ctx.conversation.platform]
        # Only the model's work is shown; the indicator ends before the reply is posted.
        async with working(adapter, ctx.conversation):
            result = await self.agent.run(ctx, text)
        if result.reply:
            await self.reply(ctx.conversation, result.reply)

    async def after_decision(self, proposal: Proposal) -> None:
        """Finish the card of a decided proposal, resume the turn that waited for it and
        post its answer; done once, by whichever caller claims it first."""
        if not await self.approvals.follow_up(proposal):
            return
        result = await self.agent.resume(proposal)
        if result is not None and result.reply:
            await self.reply(ConversationRef(**proposal.conversation), result.reply)

    async def activate_skill(self, ctx: TurnContext, name: str, rest: str) -> None:
        """`/name rest`: the person asked for the skill, so no card; then answer `rest`."""
        skill = self.agent.skills.find(name, ctx.channel_scope, by_person=True)
        await self.agent.skills.activate(ctx.conversation.key, skill, ctx.author.scope)
        if rest.strip():
            await self.turn(ctx, rest)
        else:
            await self.reply(ctx.conversation, f"🧩 The skill `{skill.name}` is active here now.")

    async def remember(self, ctx: TurnContext, command: Remember) -> None:
        if _NOTHING_TO_REMEMBER.match(command.text):
            await self.reply(
                ctx.conversation,
                "Tell me what to remember, e.g. `remember that the staging db is db-2`.",
            )
            return
        if ctx.read_only:
            await self.reply(
                ctx.conversation,
                "This channel's memory is read-only, so I cannot save notes here. "
                "DM me to keep a note of your own.",
            )
            return
        title, derived = await self.title_for(command.text)
        draft = draft_for(ctx, title.topic, title.summary, command.text, command.about_self)
        if derived:  # words that happen to match are no request to replace that note
            said_again = draft.body
            topic = await free_topic(
                self.notes, draft, first=1, reuse=lambda note: note.body == said_again
            )
            draft = dataclasses.replace(draft, topic=topic)
        await self.approvals.propose_save(ctx.conversation, ctx.author, draft)

    async def title_for(self, text: str) -> tuple[NoteTitle, bool]:
        """Topic and summary from the model's structured output (one retry), else derived;
        and whether the topic was derived from the text rather than chosen by the model."""
        prompt = (
            "Give this note a topic (a lowercase kebab-case slug of 1-4 words) and a one-line "
            f"summary under 120 characters. Answer in JSON.\n\nNote: {text}"
        )
        try:
            title = await ask_structured(self.agent.model, prompt, NoteTitle)
            summary = " ".join(title.summary.split())
            if summary and len(summary) <= SUMMARY_MAX_CHARS:
                if is_generic(slug_words(title.topic)):  # "note", "it", "1", another script
                    return NoteTitle(topic=derived_topic(text), summary=summary), True
                return NoteTitle(topic=validate_topic(slugify(title.topic)), summary=summary), False
        except (ModelUnavailable, InvalidModelOutput, InvalidInput) as exc:
            _log.info("deriving the note title without the model: %s", exc)
        return fallback_title(text), True

    async def forget(self, ctx: TurnContext, command: Forget) -> None:
        if ctx.read_only:
            await self.reply(ctx.conversation, "This channel's memory is read-only.")
            return
        note = await find_writable(self.notes, ctx, command.what)
        if note is None:
            await self.reply(
                ctx.conversation,
                f"I found no note of yours or of this conversation matching “{command.what}”.",
            )
            return
        await self.approvals.propose_forget(ctx.conversation, ctx.author, note)

    async def undo(self, ctx: TurnContext) -> None:
        """Revert the person's latest change that this conversation can see: in a channel,
        never a change to one of their private notes."""
        if ctx.read_only:
            await self.reply(ctx.conversation, "This channel's memory is read-only.")
            return
        try:
            change = await self.notes.undo(ctx.author.scope, visibility=ctx.writable())
        except NotFound:
            await self.reply(ctx.conversation, "There is no change of yours to undo here.")
            return
        what = "Removed" if change.after is None else "Restored"
        where = scope_label(change.scope, ctx.conversation)
        await self.reply(ctx.conversation, f"↩️ Undone. {what} `{change.topic}` in {where}.")

    async def recall(self, ctx: TurnContext, command: Recall) -> None:
        if command.about:
            hits = await self.notes.search(command.about, ctx.visibility, k=10)
            if not hits:
                await self.reply(ctx.conversation, f"I remember nothing about “{command.about}”.")
                return
            where = ctx.conversation
            lines = [
                f"• `{h.note.topic}` ({scope_label(h.note.scope, where)}): {h.note.summary}"
                for h in hits
            ]
            await self.reply(ctx.conversation, "Here is what I remember:\n" + "\n".join(lines))
            return
        notes = await self.notes.list_visible(ctx.visibility)
        if not notes:
            await self.reply(
                ctx.conversation,
                "I have no notes for this conversation yet. Say `remember that …` to add one.",
            )
            return
        lines = []
        current = None
        for note in notes:
            if note.scope != current:
                current = note.scope
                lines.append(f"*{scope_label(note.scope, ctx.conversation)}*")
            lines.append(f"• `{note.topic}`: {note.summary}")
        await self.reply(ctx.conversation, "\n".join(lines))
