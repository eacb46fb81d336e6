"""What a card says: where a note goes, from the reader's point of view, and a decided
card's final text, built from the rows in the database, never from the model's words."""

from __future__ import annotations

from adapters.base import APPROVE, REJECT, ConversationRef
from memory import NoteStore, Scope, ScopeKind
from memory.actions import ActionLog
from memory.proposals import NOTE_FORGET, NOTE_SAVE, SKILL_CREATE, SKILL_LOAD, Proposal

# An MCP tool call or skill script waiting for a person's ✅.
ACTION = "action"


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


async def outcome_text(proposal: Proposal, notes: NoteStore, actions: ActionLog) -> str:
    """The card's final text, from the database rows, not from the model."""
    if proposal.kind == ACTION:
        return await _action_text(proposal, actions)
    payload = proposal.payload
    topic = payload.get("topic", payload.get("name", "?"))
    scope = Scope.parse(payload["scope"]) if "scope" in payload else None
    where = scope_label(scope, conversation_of(proposal)) if scope else "?"
    if proposal.status == "expired":
        hours = (proposal.expires_at - proposal.created_at).total_seconds() / 3600
        return (
            f"⌛ Expired (proposal #{proposal.id}): nobody decided within {hours:g} h, "
            f"so `{topic}` was left as it was."
        )
    if proposal.status == "rejected":
        declined = {SKILL_LOAD: "loaded", SKILL_CREATE: "created"}.get(proposal.kind)
        if declined:
            return f"{REJECT} Declined (proposal #{proposal.id}): `{topic}` was not {declined}."
        return f"{REJECT} Discarded (proposal #{proposal.id}): `{topic}` was left as it was."
    if proposal.status == "failed":
        return f"⚠️ Not applied (proposal #{proposal.id}): {proposal.outcome}"
    if proposal.kind == NOTE_SAVE and scope is not None:
        note = await notes.fetch(scope, topic)
        if note is None:
            return f"{APPROVE} Approved (proposal #{proposal.id}), but the note is gone."
        if note.private and not conversation_of(proposal).is_dm:
            return f"{APPROVE} Approved (proposal #{proposal.id})."
        verb = {"created": "Saved", "updated": "Updated"}.get(proposal.outcome, "Kept")
        return (
            f"{APPROVE} {verb} `{note.topic}` in {where}: {note.summary}\nSay `undo` to revert it."
        )
    if proposal.kind == SKILL_LOAD:
        return f"{APPROVE} Loaded the skill `{payload.get('name')}` for this conversation."
    if proposal.kind == SKILL_CREATE:
        return f"{APPROVE} Created the skill `{payload.get('name')}`: {proposal.outcome}."
    if proposal.kind == NOTE_FORGET:
        return f"{APPROVE} Forgot `{topic}` from {where}. Say `undo` to bring it back."
    return f"{APPROVE} Approved (proposal #{proposal.id})."


async def _action_text(proposal: Proposal, actions: ActionLog) -> str:
    payload = proposal.payload
    what = f"`{payload.get('tool')}` on `{payload.get('server')}` (proposal #{proposal.id})"
    action = await actions.fetch_by_proposal(proposal.id)
    outcome = action.outcome if action is not None else "pending"
    took = f" in {action.duration_ms} ms" if action and action.duration_ms is not None else ""
    if proposal.status == "expired" or outcome == "expired":
        return f"⌛ Expired: {what} was not run."
    if proposal.status == "failed" and proposal.outcome:  # approved, then refused to run
        return f"⚠️ Not run: {what}: {proposal.outcome}."
    if proposal.status in ("rejected", "failed") or outcome == "declined":
        return f"{REJECT} Declined: {what} was not run."
    who = proposal.decided_by or "?"
    texts = {
        "pending": f"{APPROVE} Approved by {who}: {what} is starting…",
        "running": f"{APPROVE} Approved by {who}: {what} is running…",
        "ok": f"{APPROVE} Ran {what}: done{took}.",
        "error": f"⚠️ Ran {what}: the tool reported a failure{took}.",
        "unknown": f"❓ Ran {what}: outcome unknown{took}; it may or may not have happened.",
    }
    return texts.get(outcome, f"{APPROVE} Approved: {what}.")
