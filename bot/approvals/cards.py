"""What every card says alike: where a note goes, from the reader's point of view, a
note's body as a card quotes it, and the conversation a card is in. What a card of each
kind says is in `bot/approvals/kinds/`."""

from __future__ import annotations

from adapters.base import ConversationRef
from memory import Scope, ScopeKind
from memory.stores.proposals import Proposal


def scope_label(scope: Scope, conversation: ConversationRef) -> str:
    """How a card names where a note goes, from the reader's point of view."""
    if scope.kind is ScopeKind.TEAM:
        return f"the team ({scope})"
    if scope.kind is ScopeKind.CHANNEL:
        where = "this conversation" if conversation.is_dm else "this channel"
        return f"{where} ({scope})"
    return f"your notes ({scope})"


def quote(text: str, max_lines: int = 8) -> str:
    """The first `max_lines` of a note's body as a card quotes them."""
    lines = text.strip().splitlines()
    shown = [f"> {line}" for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"> … ({len(lines) - max_lines} more lines)")
    return "\n".join(shown)


def conversation_of(proposal: Proposal) -> ConversationRef:
    return ConversationRef(**proposal.conversation)
