"""note_save: a note the model or a person wants saved, saved only when the requester (or
an admin) approves its card. The note is written in the decision's transaction by its
payload (`memory.stores.proposals.NoteSave`), only if it is still as the card showed it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.base import APPROVE, ConversationRef
from bot.approvals.cards import conversation_of, quote, scope_label
from bot.approvals.kinds.base import Plain, Records, approved_text, closed_text
from memory import Note, NoteDraft
from memory.stores.proposals import NOTE_SAVE, NoteSave, Proposal


class NoteSaveKind(Plain):
    """Saving a note."""

    name = NOTE_SAVE
    verb = "save"
    asks = "save the note"
    label = "save"
    writes_memory = True

    def payload(self, proposal: Proposal) -> NoteSave:
        return NoteSave.from_json(proposal.payload)

    def subject(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("topic", "?"))

    def card(self, draft: NoteDraft, replaces: Note | None, conversation: ConversationRef) -> str:
        """The card: where the note goes, what it says, and the note it replaces."""
        private = " (private)" if draft.private else ""
        lines = [
            f"📝 {'Update' if replaces else 'Save'} this note?",
            f"Where: {scope_label(draft.scope, conversation)}{private}",
            f"Topic: `{draft.topic}`",
            f"Summary: {draft.summary}",
        ]
        if replaces is not None:
            lines.append(f"Replaces: {replaces.summary}")
        if draft.body and draft.body.strip() != draft.summary:
            lines.append(quote(draft.body))
        return "\n".join(lines)

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        draft = self.payload(proposal).draft
        closed = closed_text(proposal, draft.topic)
        if closed is not None:
            return closed
        note = await records.notes.fetch(draft.scope, draft.topic)
        if note is None:
            return f"{APPROVE} Approved (proposal #{proposal.id}), but the note is gone."
        conversation = conversation_of(proposal)
        if note.private and not conversation.is_dm:
            return approved_text(proposal)
        verb = {"created": "Saved", "updated": "Updated"}.get(proposal.outcome, "Kept")
        where = scope_label(draft.scope, conversation)
        return (
            f"{APPROVE} {verb} `{note.topic}` in {where}: {note.summary}\nSay `undo` to revert it."
        )


NOTE_SAVE_KIND = NoteSaveKind()
