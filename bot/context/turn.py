"""Who is asking, where, and what they may read and change: shared by the command router
and the agent, so both target notes the same way."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from adapters.base import ConversationRef, UserRef
from bot.context.scopes import channel_scope, team_scope, user_scope
from memory import Note, NoteDraft, NoteStore, Scope, Viewer, Visibility, visibility_for
from memory.types import TOPIC_MAX_CHARS, ScopeKind


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
        if self.conversation.is_dm:
            return user_scope(self.author)
        return channel_scope(self.conversation)

    @property
    def history_key(self) -> str:
        """One conversation's history: a channel thread, or a DM (marked, for reflection)."""
        thread = self.conversation.thread_id or ""
        marker = "dm:" if self.conversation.is_dm else ""
        return f"{marker}{self.conversation.key}/{thread}"

    @property
    def channel_scope(self) -> str | None:
        return None if self.conversation.is_dm else channel_scope(self.conversation)

    def writable(self) -> Visibility:
        """What a person may propose changes to from here: what they see, but never team
        notes (admin-only)."""
        return Visibility(
            full=tuple(s for s in self.visibility.full if s.kind is not ScopeKind.TEAM),
            public_only=tuple(
                s for s in self.visibility.public_only if s.kind is not ScopeKind.TEAM
            ),
        )


def make_context(
    conversation: ConversationRef, author: UserRef, read_only: bool, link: str = ""
) -> TurnContext:
    """The turn context of a person in a conversation; isolation comes from `visibility_for`."""
    speaker = Scope.parse(user_scope(author))
    channel = None if conversation.is_dm else Scope.parse(channel_scope(conversation))
    team_text = team_scope(conversation)
    team = Scope.parse(team_text) if team_text else None
    viewer = Viewer(speaker, channel, team)
    return TurnContext(conversation, author, visibility_for(viewer), read_only, link)


def for_person_alone(ctx: TurnContext) -> TurnContext:
    """The context of an answer only its person sees (a slash command's ephemeral reply):
    their private notes are readable too, even in a channel."""
    speaker = Scope.parse(user_scope(ctx.author))
    full = ctx.visibility.full
    visibility = Visibility(
        full=full if speaker in full else (*full, speaker),
        public_only=tuple(s for s in ctx.visibility.public_only if s != speaker),
    )
    return dataclasses.replace(ctx, visibility=visibility)


def draft_for(ctx: TurnContext, topic: str, summary: str, body: str, about_self: bool) -> NoteDraft:
    """Where a note goes: in a DM the person's private notes; in a channel the channel's,
    unless it is about the person, which makes a user note that may show in channels."""
    author = user_scope(ctx.author)
    speaker = Scope.parse(author)
    if ctx.conversation.is_dm:
        return NoteDraft(speaker, topic, summary, body, private=True, author=author)
    if about_self:
        return NoteDraft(speaker, topic, summary, body, private=False, author=author)
    channel = Scope.parse(channel_scope(ctx.conversation))
    return NoteDraft(channel, topic, summary, body, author=author)


async def find_writable(notes: NoteStore, ctx: TurnContext, what: str) -> Note | None:
    """The note `what` names (a topic, or else the best search hit) among the notes this
    person may change from here."""
    writable = ctx.writable()
    for note in await notes.read(ctx.visibility, what.strip().lower()):
        if writable.allows(note.scope, note.private):
            return note
    for hit in await notes.search(what, ctx.visibility, k=10, bump=False):
        if writable.allows(hit.note.scope, hit.note.private):
            return hit.note
    return None


async def free_topic(
    notes: NoteStore,
    draft: NoteDraft,
    *,
    first: int = 2,
    reuse: Callable[[Note], bool] = lambda note: False,
) -> str:
    """The first of `topic` (when `first` is 1), `topic-2`, `topic-3`… that no note of the
    draft's scope holds, or whose note `reuse` accepts; cut to fit the topic limit."""
    for number in itertools.count(first):
        suffix = f"-{number}" if number > 1 else ""
        topic = draft.topic[: TOPIC_MAX_CHARS - len(suffix)].rstrip("-") + suffix
        existing = await notes.fetch(draft.scope, topic)
        if existing is None or reuse(existing):
            return topic
    raise AssertionError("unreachable")
