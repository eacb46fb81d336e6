"""The memory tools: read and search what this conversation may see, and propose saving or
forgetting a note on a card."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.approvals.service import ApprovalService
from bot.context.turn import TurnContext, draft_for, find_writable
from bot.tools.base import BuiltinTool, Call, Kind, Ok, ToolArgs
from memory import NoteStore
from memory.stores.conversations import ConversationLog

# Past messages a memory_search shows, and how much of each.
MESSAGE_HITS = 5
MESSAGE_CHARS = 300


class MemoryReadArgs(ToolArgs):
    topic: str = Field(description="the topic slug from an index, e.g. staging-db")


class MemorySearchArgs(ToolArgs):
    query: str = Field(description="words to search the notes for")
    limit: int = Field(5, ge=1, le=20, description="how many notes to return")


class ProposeNoteArgs(ToolArgs):
    topic: str = Field(description="lowercase kebab-case slug, e.g. staging-db")
    summary: str = Field(description="one line shown in the index")
    body: str = Field("", description="the details")
    scope: Literal["channel", "user"] = Field(
        "channel", description="channel: for this conversation; user: about the person"
    )


class ProposeForgetArgs(ToolArgs):
    topic: str = Field(description="the topic slug of the note to forget")


def memory_tools(
    notes: NoteStore, log: ConversationLog, approvals: ApprovalService
) -> list[BuiltinTool]:
    """memory_read, memory_search, propose_note and propose_forget."""

    async def memory_read(call: Call, args: MemoryReadArgs) -> Ok:
        found = await notes.read(call.ctx.visibility, args.topic)
        if not found:
            return Ok(f"no note named {args.topic!r} is visible here; try memory_search")
        shown = [f"[{n.scope}] {n.topic}: {n.summary}\n{n.body}".rstrip() for n in found]
        return Ok("\n\n".join(shown))

    async def memory_search(call: Call, args: MemorySearchArgs) -> Ok:
        return Ok(await search_memory(notes, log, call.ctx, args.query, args.limit))

    async def propose_note(call: Call, args: ProposeNoteArgs) -> Ok:
        ctx = call.ctx
        draft = draft_for(ctx, args.topic, args.summary, args.body, args.scope == "user")
        proposal = await approvals.propose_save(ctx.conversation, ctx.author, draft)
        return Ok(
            f"proposal #{proposal.id} is shown to the person as a card; the note is saved "
            "only if they approve it with ✅. Tell them so briefly."
        )

    async def propose_forget(call: Call, args: ProposeForgetArgs) -> Ok:
        ctx = call.ctx
        note = await find_writable(notes, ctx, args.topic)
        if note is None:
            return Ok(f"no note {args.topic!r} that this person may change is visible here")
        proposal = await approvals.propose_forget(ctx.conversation, ctx.author, note)
        return Ok(f"proposal #{proposal.id} to forget {note.topic} is shown as a card")

    return [
        BuiltinTool(
            "memory_read",
            "Read the full note of a topic listed in a memory index.",
            Kind.READ,
            MemoryReadArgs,
            memory_read,
        ),
        BuiltinTool(
            "memory_search",
            "Search the notes and past messages this conversation may read.",
            Kind.READ,
            MemorySearchArgs,
            memory_search,
        ),
        BuiltinTool(
            "propose_note",
            "Propose saving a note; the person approves it on a card before it is saved.",
            Kind.PROPOSAL,
            ProposeNoteArgs,
            propose_note,
            writes_memory=True,
        ),
        BuiltinTool(
            "propose_forget",
            "Propose forgetting a note; the person approves it on a card first.",
            Kind.PROPOSAL,
            ProposeForgetArgs,
            propose_forget,
            writes_memory=True,
        ),
    ]


async def search_memory(
    notes: NoteStore, log: ConversationLog, ctx: TurnContext, query: str, limit: int
) -> str:
    """Notes, then past messages of this conversation's scope, each with its link."""
    vectors = notes.vectors
    vector = await vectors.query_vector(query) if vectors is not None else None
    hits = await notes.search(query, ctx.visibility, k=limit, vector=vector)
    said = await log.search(
        query, ctx.visibility, k=min(limit, MESSAGE_HITS), vectors=vectors, vector=vector
    )
    if not hits and not said:
        return "no notes or past messages found"
    lines = [f"- [{h.note.scope}] {h.note.topic}: {h.snippet}" for h in hits]
    if said:
        lines.append("past messages:")
    for m in said:
        where = f" ({m.link})" if m.link else ""
        text = " ".join(m.content.split())[:MESSAGE_CHARS]
        lines.append(f"- {m.created_at[:16].replace('T', ' ')} {m.author_name}: {text}{where}")
    return "\n".join(lines)
