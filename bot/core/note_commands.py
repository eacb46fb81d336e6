"""The deterministic commands on notes: `remember` and `forget` post a card, `undo` reverts
the person's latest change, `what do you remember` lists or searches what they may read.
None of them runs a model turn; `remember` asks the model only for the note's title."""

from __future__ import annotations

import dataclasses
import re

from adapters.base import Answer
from bot.approvals.cards import scope_label
from bot.approvals.service import ApprovalService
from bot.context.scopes import user_scope
from bot.context.turn import TurnContext, draft_for, find_writable, free_topic
from bot.core.commands import HELP_TEXT, Command, Forget, Recall, Remember, Undo
from bot.core.titles import draft_title
from bot.model.client import Model
from memory import NoteStore, NotFound
from memory.stores.proposals import Proposal

# `remember that` with nothing after it parses as the text "that".
_NOTHING_TO_REMEMBER = re.compile(r"^(?:that\b)?[\W_]*$", re.IGNORECASE)


class NoteCommands:
    """Carries out a parsed command for the person in a turn's context; `say` answers
    them, wherever the command came from (a message, or a slash command)."""

    def __init__(self, notes: NoteStore, approvals: ApprovalService, model: Model) -> None:
        self.notes = notes
        self.approvals = approvals
        self.model = model  # for the title of a note to remember

    async def run(self, ctx: TurnContext, command: Command, say: Answer) -> Proposal | None:
        """Run `command`; the proposal whose card it posted, if any."""
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
        title, derived = await draft_title(self.model, command.text)
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
