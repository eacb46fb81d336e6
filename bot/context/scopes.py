"""Memory scopes of the people and conversations the adapters report: the core turns
platform ids into scope strings here, so the adapter contract carries ids only."""

from __future__ import annotations

from adapters.base import ConversationRef, UserRef
from memory.scope_ids import scope_id


def user_scope(user: UserRef) -> str:
    """The person's memory scope, e.g. `user:slack/U024BE7LH`; ids with other characters
    are %-escaped (`user:matrix/@alice%3Amatrix.org`)."""
    return f"user:{user.platform}/{scope_id(user.id)}"


def channel_scope(conversation: ConversationRef) -> str:
    """The conversation's channel scope, e.g. `channel:slack/C1` (a DM has one too)."""
    return f"channel:{conversation.platform}/{scope_id(conversation.channel_id)}"


def team_scope(conversation: ConversationRef) -> str | None:
    """The workspace or server's scope, e.g. `team:slack/T1`; None where there is none."""
    if conversation.team_id is None:
        return None
    return f"team:{conversation.platform}/{scope_id(conversation.team_id)}"
