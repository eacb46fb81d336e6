"""note_forget: a note to forget, forgotten only when the requester (or an admin) approves
its card, in the decision's transaction by its payload (`memory.stores.proposals.NoteForget`),
and only if it is still as the card showed it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.base import APPROVE, ConversationRef
from bot.approvals.cards import conversation_of, scope_label
from bot.approvals.kinds.base import Plain, Records, closed_text
from memory import Note
from memory.stores.proposals import NOTE_FORGET, NoteForget, Proposal


class NoteForgetKind(Plain):
    """Forgetting a note."""

    name = NOTE_FORGET
    verb = "forget"
    asks = "forget the note"
    label = "forget"
    writes_memory = True

    def payload(self, proposal: Proposal) -> NoteForget:
        return NoteForget.from_json(proposal.payload)

    def subject(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("topic", "?"))

    def card(self, note: Note, conversation: ConversationRef) -> str:
        """The card: which note, where, and what it says."""
        return "\n".join(
            [
                "🗑️ Forget this note?",
                f"Where: {scope_label(note.scope, conversation)}",
                f"Topic: `{note.topic}`",
                f"Summary: {note.summary}",
            ]
        )

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        payload = self.payload(proposal)
        closed = closed_text(proposal, payload.topic)
        if closed is not None:
            return closed
        where = scope_label(payload.scope, conversation_of(proposal))
        return f"{APPROVE} Forgot `{payload.topic}` from {where}. Say `undo` to bring it back."


NOTE_FORGET_KIND = NoteForgetKind()
