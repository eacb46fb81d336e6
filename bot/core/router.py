"""The command router: deterministic commands first, anything else is an agent turn."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
from collections.abc import AsyncIterator, Mapping

from adapters.base import (
    AWAITING_APPROVAL,
    Adapter,
    Answer,
    ConversationRef,
    Message,
    SlashCommand,
    UserRef,
    measure,
    working,
)
from bot.approvals.cards import scope_label
from bot.approvals.service import ApprovalService
from bot.config.settings import Settings
from bot.context.scopes import channel_scope, user_scope
from bot.context.turn import (
    TurnContext,
    draft_for,
    find_writable,
    for_person_alone,
    free_topic,
    make_context,
)
from bot.core.agent import Agent, TurnResult
from bot.core.commands import (
    HELP_TEXT,
    SLASH_HELP,
    Command,
    Forget,
    Help,
    Recall,
    Remember,
    Undo,
    parse_command,
    parse_slash,
)
from bot.core.live_reply import Progress, live_reply, mend_cut_replies
from bot.core.titles import draft_title
from bot.fencing import still_held
from bot.split import split_message
from memory import InvalidInput, NoteStore, NotFound
from memory.live_replies import LiveReplies
from memory.proposals import NOTE_FORGET, Proposal
from skills.types import SkillError

_log = logging.getLogger(__name__)

SKILL_COMMAND = re.compile(r"^/([^\s/]+)(?:\s+(.*))?$", re.DOTALL)
# `remember that` with nothing after it parses as the text "that".
_NOTHING_TO_REMEMBER = re.compile(r"^(?:that\b)?[\W_]*$", re.IGNORECASE)


def _card_posted(proposal: Proposal) -> str:
    verb = "forget the note" if proposal.kind == NOTE_FORGET else "save the note"
    return f"I posted card #{proposal.id} here: react ✅ on it to {verb}, or ❌ to drop it."


class Router:
    """Handles one message: a command, or a model turn, and the reply."""

    def __init__(
        self,
        settings: Settings,
        notes: NoteStore,
        agent: Agent,
        approvals: ApprovalService,
        adapters: Mapping[str, Adapter],
        live_replies: LiveReplies | None = None,
    ) -> None:
        self.settings = settings
        self.notes = notes
        self.agent = agent
        self.approvals = approvals
        self.adapters = adapters
        self.live_replies = live_replies  # where streamed replies are recorded, if anywhere
        self.read_only = frozenset(settings.bot.read_only_channels)

    def context(self, message: Message) -> TurnContext:
        conv = message.conversation
        read_only = channel_scope(conv) in self.read_only
        return make_context(conv, message.author, read_only, message.link)

    async def reply(self, conversation: ConversationRef, text: str) -> None:
        """Post `text` in the conversation, split to the platform's limit."""
        adapter = self.adapters[conversation.platform]
        await still_held()
        for chunk in split_message(text, adapter.max_message_chars, measure(adapter)):
            await adapter.send(conversation, chunk)

    def _say(self, conversation: ConversationRef) -> Answer:
        async def say(text: str) -> None:
            await self.reply(conversation, text)

        return say

    async def handle(self, message: Message) -> None:
        if isinstance(message, SlashCommand):
            await self.slash(message)
            return
        ctx = self.context(message)
        say = self._say(message.conversation)
        command = parse_command(message.text)
        try:
            activation = SKILL_COMMAND.match(message.text.strip()) if command is None else None
            if activation is not None:
                await self.activate_skill(ctx, activation.group(1), activation.group(2) or "")
            elif command is None:
                await self.turn(ctx, message.text)
            else:
                await self.command(ctx, command, say)
        except (InvalidInput, SkillError) as exc:
            await say(f"⚠️ {exc}")

    async def command(self, ctx: TurnContext, command: Command, say: Answer) -> Proposal | None:
        """Run a deterministic command; `say` answers the person. The proposal whose card
        it posted, if any."""
        if isinstance(command, Remember):
            return await self.remember(ctx, command, say)
        if isinstance(command, Forget):
            return await self.forget(ctx, command, say)
        if isinstance(command, Undo):
            await self.undo(ctx, say)
        elif isinstance(command, Recall):
            await self.recall(ctx, command, say)
        else:
            await say(HELP_TEXT)
        return None

    async def slash(self, message: SlashCommand) -> None:
        """`/lorebot …`: the same commands, answered to the person alone; cards still go in
        the conversation. Recall there may show the person's own private notes."""
        ctx = self.context(message)
        command = parse_slash(message.text)
        try:
            if command is None:
                word = message.text.strip().split(" ", 1)[0][:40] or "(nothing)"
                await message.answer(f"I have no command `{word}`.\n{SLASH_HELP}")
            elif isinstance(command, Help):
                await message.answer(SLASH_HELP)
            elif isinstance(command, Recall):
                await self.recall(for_person_alone(ctx), command, message.answer)
            else:
                proposal = await self.command(ctx, command, message.answer)
                if proposal is not None:
                    await message.answer(_card_posted(proposal))
        except (InvalidInput, SkillError) as exc:
            await message.answer(f"⚠️ {exc}")

    async def turn(self, ctx: TurnContext, text: str) -> None:
        """A model turn, shown while it runs: the status, and the reply as it is written."""
        async with self._showing(ctx.conversation, ctx.author) as progress:
            result = await self.agent.run(ctx, text, progress)
            await self._deliver(ctx.conversation, progress, result)

    async def after_decision(self, proposal: Proposal) -> None:
        """Finish the card of a decided proposal, resume the turn that waited for it and
        post its answer; done once, by whichever caller claims it first."""
        if not await self.approvals.follow_up(proposal):
            return
        saved = proposal.payload.get("turn")
        if not saved:
            return
        conversation, author = ConversationRef(**saved["conversation"]), UserRef(**saved["author"])
        async with self._showing(conversation, author) as progress:
            result = await self.agent.resume(proposal, progress)
            if result is not None:
                await self._deliver(conversation, progress, result)

    @contextlib.asynccontextmanager
    async def _showing(
        self, conversation: ConversationRef, author: UserRef
    ) -> AsyncIterator[Progress]:
        """The turn's status and streamed reply while the block runs; a reply the block
        does not finish (shutdown, a failure) is marked as cut short."""
        adapter = self.adapters[conversation.platform]
        live = live_reply(adapter, conversation, author, self.live_replies, self.agent.secrets)
        try:
            async with working(adapter, conversation) as status:
                yield Progress(live, status)
        finally:
            if live is not None:
                await live.cut()  # nothing when it was finished

    async def _deliver(
        self, conversation: ConversationRef, progress: Progress, result: TurnResult
    ) -> None:
        if result.awaiting is not None:
            await progress.status(AWAITING_APPROVAL)
            if progress.reply is not None and progress.reply.shown:
                # What the model said before asking for the card stays as it was shown.
                await progress.reply.finish(progress.reply.shown)
        if not result.reply:
            return
        if progress.reply is not None:
            await progress.reply.finish(result.reply)
        else:
            await self.reply(conversation, result.reply)

    async def mend(self, conversation: ConversationRef) -> int:
        """Mark the replies a stopped replica left half-written in `conversation` as cut
        short; how many."""
        if self.live_replies is None:
            return 0
        adapter = self.adapters[conversation.platform]
        return await mend_cut_replies(adapter, self.live_replies, conversation.key.__eq__)

    async def activate_skill(self, ctx: TurnContext, name: str, rest: str) -> None:
        """`/name rest`: the person asked for the skill, so no card; then answer `rest`."""
        skill = self.agent.skills.find(name, ctx.channel_scope, by_person=True)
        await self.agent.skills.activate(ctx.conversation.key, skill, user_scope(ctx.author))
        if rest.strip():
            await self.turn(ctx, rest)
        else:
            await self.reply(ctx.conversation, f"🧩 The skill `{skill.name}` is active here now.")

    async def remember(self, ctx: TurnContext, command: Remember, say: Answer) -> Proposal | None:
        """Post a card proposing the note; the proposal, or None when there is none."""
        if _NOTHING_TO_REMEMBER.match(command.text):
            await say("Tell me what to remember, e.g. `remember that the staging db is db-2`.")
            return None
        if ctx.read_only:
            await say(
                "This channel's memory is read-only, so I cannot save notes here. "
                "DM me to keep a note of your own.",
            )
            return None
        title, derived = await draft_title(self.agent.model, command.text)
        draft = draft_for(ctx, title.topic, title.summary, command.text, command.about_self)
        if derived:  # words that happen to match are no request to replace that note
            said_again = draft.body
            topic = await free_topic(
                self.notes, draft, first=1, reuse=lambda note: note.body == said_again
            )
            draft = dataclasses.replace(draft, topic=topic)
        return await self.approvals.propose_save(ctx.conversation, ctx.author, draft)

    async def forget(self, ctx: TurnContext, command: Forget, say: Answer) -> Proposal | None:
        """Post a card proposing to forget the note `command` names."""
        if ctx.read_only:
            await say("This channel's memory is read-only.")
            return None
        if not command.what.strip():
            await say("Tell me which note to forget, e.g. `forget staging-db`.")
            return None
        note = await find_writable(self.notes, ctx, command.what)
        if note is None:
            await say(
                f"I found no note of yours or of this conversation matching “{command.what}”."
            )
            return None
        return await self.approvals.propose_forget(ctx.conversation, ctx.author, note)

    async def undo(self, ctx: TurnContext, say: Answer) -> None:
        """Revert the person's latest change that this conversation can see: in a channel,
        never a change to one of their private notes."""
        if ctx.read_only:
            await say("This channel's memory is read-only.")
            return
        try:
            change = await self.notes.undo(user_scope(ctx.author), visibility=ctx.writable())
        except NotFound:
            await say("There is no change of yours to undo here.")
            return
        if change.scope is None or change.topic is None:  # an import, all in this view
            await say(f"↩️ Undone: {change.reason.removeprefix('undo of ')}, {change.notes} notes.")
            return
        what = "Removed" if change.after is None else "Restored"
        where = scope_label(change.scope, ctx.conversation)
        await say(f"↩️ Undone. {what} `{change.topic}` in {where}.")

    async def recall(self, ctx: TurnContext, command: Recall, say: Answer) -> None:
        """The notes this context may read: those matching `command.about`, or all of them."""
        if command.about:
            hits = await self.notes.search(command.about, ctx.visibility, k=10)
            if not hits:
                await say(f"I remember nothing about “{command.about}”.")
                return
            where = ctx.conversation
            lines = [
                f"• `{h.note.topic}` ({scope_label(h.note.scope, where)}): {h.note.summary}"
                for h in hits
            ]
            await say("Here is what I remember:\n" + "\n".join(lines))
            return
        notes = await self.notes.list_visible(ctx.visibility)
        if not notes:
            await say(
                "I have no notes for this conversation yet. Say `remember that …` to add one."
            )
            return
        lines = []
        current = None
        for note in notes:
            if note.scope != current:
                current = note.scope
                lines.append(f"*{scope_label(note.scope, ctx.conversation)}*")
            lines.append(f"• `{note.topic}`: {note.summary}")
        await say("\n".join(lines))
