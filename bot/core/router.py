"""The command router: deterministic commands first, anything else is an agent turn."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence

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
from bot.approvals.closing import Closings
from bot.approvals.kinds.registry import get_kind
from bot.approvals.service import ApprovalService
from bot.config.settings import Settings
from bot.context.scopes import channel_scope, user_scope
from bot.context.skills import SkillUse
from bot.context.suspended import waiting_turn
from bot.context.turn import TurnContext, for_person_alone, make_context
from bot.core.agent import Agent, TurnResult
from bot.core.commands import SLASH_HELP, Help, Recall, parse_command, parse_slash
from bot.core.live_reply import Progress, live_reply, mend_cut_replies
from bot.core.note_commands import NoteCommands
from bot.fencing import still_held
from bot.split import split_message
from memory import InvalidInput
from memory.stores.live_replies import LiveReplies
from memory.stores.proposals import Proposal
from skills.types import SkillError

_log = logging.getLogger(__name__)

SKILL_COMMAND = re.compile(r"^/([^\s/]+)(?:\s+(.*))?$", re.DOTALL)


def _card_posted(proposal: Proposal) -> str:
    asks = get_kind(proposal.kind).asks
    return f"I posted card #{proposal.id} here: react ✅ on it to {asks}, or ❌ to drop it."


class Router:
    """Handles one message: a command (`NoteCommands`), a skill asked for by name, or a
    model turn, and the reply. It finishes the proposals that close without a decision
    (`closings`), as it finishes decided ones: the card, then the turn that waited."""

    def __init__(
        self,
        settings: Settings,
        adapters: Mapping[str, Adapter],
        *,
        agent: Agent,
        commands: NoteCommands,
        skills: SkillUse,
        approvals: ApprovalService,
        closings: Closings,
        live_replies: LiveReplies | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.settings = settings
        self.adapters = adapters
        self.agent = agent
        self.commands = commands
        self.skills = skills
        self.approvals = approvals
        self.live_replies = live_replies  # where streamed replies are recorded, if anywhere
        self.secrets = tuple(secrets)  # never in a streamed reply
        self.read_only = frozenset(settings.bot.read_only_channels)
        closings.subscribe(self.after_decision)

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
                await self.commands.run(ctx, command, say)
        except (InvalidInput, SkillError) as exc:
            await say(f"⚠️ {exc}")

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
                await self.commands.recall(for_person_alone(ctx), command, message.answer)
            else:
                proposal = await self.commands.run(ctx, command, message.answer)
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
        saved = waiting_turn(proposal.payload)
        if saved is None:
            return
        async with self._showing(saved.conversation, saved.author) as progress:
            result = await self.agent.resume(proposal, saved, progress)
            if result is not None:
                await self._deliver(saved.conversation, progress, result)

    @contextlib.asynccontextmanager
    async def _showing(
        self, conversation: ConversationRef, author: UserRef
    ) -> AsyncIterator[Progress]:
        """The turn's status and streamed reply while the block runs; a reply the block
        does not finish (shutdown, a failure) is marked as cut short."""
        adapter = self.adapters[conversation.platform]
        live = live_reply(adapter, conversation, author, self.live_replies, self.secrets)
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
        skill = self.skills.find(name, ctx.channel_scope, by_person=True)
        await self.skills.activate(ctx.conversation.key, skill, user_scope(ctx.author))
        if rest.strip():
            await self.turn(ctx, rest)
        else:
            await self.reply(ctx.conversation, f"🧩 The skill `{skill.name}` is active here now.")
