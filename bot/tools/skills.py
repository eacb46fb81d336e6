"""The skill tools: load a skill (a card unless a person asked for it), read its resources,
and propose a new one."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from bot.approvals.kinds.skill_load import SKILL_LOAD_KIND
from bot.approvals.service import ApprovalService
from bot.context.scopes import user_scope
from bot.context.skills import SkillUse
from bot.context.turn import TurnContext
from bot.tools.base import (
    BuiltinTool,
    Call,
    Kind,
    Ok,
    Suspend,
    ToolArgs,
    ToolError,
    ToolOutput,
    ToolResult,
)
from memory.policy.redaction import mask_known
from memory.stores.proposals import Proposal


class LoadSkillArgs(ToolArgs):
    name: str = Field(description="the skill's name from the skill catalog")


class ReadSkillResourceArgs(ToolArgs):
    skill: str = Field(description="the skill's name")
    path: str = Field(description="a file under the skill's references/ or assets/")


class ProposeSkillArgs(ToolArgs):
    name: str = Field(description="lowercase letters, digits and hyphens, e.g. incident-triage")
    description: str = Field(description="what the skill does, then 'Use when …'")
    body: str = Field(description="the Markdown instructions")


def skill_tools(
    skills: SkillUse, approvals: ApprovalService, *, secrets: Sequence[str] = ()
) -> list[BuiltinTool]:
    """load_skill, read_skill_resource (offered where there are skills) and propose_skill.
    A resource reaches the model without lorebot's configured `secrets`, as every tool's
    output does."""

    def has_skills(ctx: TurnContext) -> bool:
        return bool(skills.catalog_lines(ctx.channel_scope))

    async def load_skill(call: Call, args: LoadSkillArgs) -> ToolOutput:
        ctx = call.ctx
        skill = skills.find(args.name, ctx.channel_scope, by_person=False)
        if await skills.is_active(ctx.conversation.key, skill):
            return Ok(skills.tool_result(skill))
        proposal = await approvals.propose_skill_load(
            ctx.conversation, ctx.author, skill, skills.load_card_lines(skill), call.saved_turn()
        )
        return Suspend(proposal)

    async def loaded(ctx: TurnContext, proposal: Proposal) -> ToolResult:
        if proposal.status != "approved":
            return Ok(SKILL_LOAD_KIND.resume_message(proposal))
        approved = SKILL_LOAD_KIND.payload(proposal)
        skill = skills.catalog.get(approved.name)
        if skill is None or skill.sha256 != approved.sha256:
            return ToolError(
                f"the skill {approved.name} changed or disappeared since it was approved"
            )
        await skills.activate(ctx.conversation.key, skill, proposal.decided_by or "")
        return Ok(skills.tool_result(skill))

    async def read_skill_resource(call: Call, args: ReadSkillResourceArgs) -> Ok:
        ctx = call.ctx
        text = await skills.read(ctx.conversation.key, args.skill, args.path, ctx.channel_scope)
        return Ok(mask_known(text, secrets))

    async def propose_skill(call: Call, args: ProposeSkillArgs) -> Ok:
        ctx = call.ctx
        name = skills.new_skill_name(args.name)  # before any card is posted
        text = skills.draft_skill(
            name, args.description, args.body, user_scope(ctx.author), ctx.conversation.key
        )
        proposal = await approvals.propose_skill_create(ctx.conversation, ctx.author, name, text)
        return Ok(f"proposal #{proposal.id} shows the whole skill on a card for approval")

    return [
        BuiltinTool(
            "load_skill",
            "Load a skill's full instructions from the skill catalog (the person may be asked).",
            Kind.PROPOSAL,
            LoadSkillArgs,
            load_skill,
            loaded,
            when=has_skills,
        ),
        BuiltinTool(
            "read_skill_resource",
            "Read a text file from a loaded skill's references/ or assets/ folder.",
            Kind.READ,
            ReadSkillResourceArgs,
            read_skill_resource,
            when=has_skills,
        ),
        BuiltinTool(
            "propose_skill",
            "Propose a new skill; the person sees the whole SKILL.md and approves it first.",
            Kind.PROPOSAL,
            ProposeSkillArgs,
            propose_skill,
            writes_memory=True,
        ),
    ]
