"""run_skill_script: run a script of a skill active in the conversation, once a person
approved that exact run on a card.

Offered only when the operator set `skills.scripts` to `sandboxed` (and bubblewrap works)
or `host`, and only where an active skill ships scripts. Every run needs a card, never
exempted: it shows the script's path, SHA-256 and first lines, the hash and count of all
the skill's files, and the redacted arguments. The approval is bound to both hashes and to
the mode in force when the turn asked: at ✅ the folder is read again, and only when it
still hashes the same is that very read staged and run. The run is recorded as an action;
its output is capped and scrubbed of secrets before the model, the card, the logs or the
database see it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints, field_validator

from bot.actions.held import LOST, HeldArguments
from bot.actions.process import ScriptResult
from bot.actions.sandbox import (
    Limits,
    ScriptError,
    process_limit_gap,
    run_script,
    script_sandbox_problem,
)
from bot.approvals.kinds.action import ACTION, WHERE, ScriptRun, script_card
from bot.approvals.service import ApprovalService
from bot.config.sections import resolve_secret
from bot.config.settings import Settings
from bot.context.scopes import user_scope
from bot.context.skills import SkillUse
from bot.context.turn import TurnContext
from bot.errors import ConfigError
from bot.fencing import still_held
from bot.tools.actions import close_unapproved, not_run
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
from memory.policy.redaction import redact, redact_value
from memory.stores.actions import BY_CARD, ActionLog, finish_run
from memory.stores.proposals import Proposal
from skills.resources import ScriptFile, list_scripts, read_script
from skills.snapshot import SkillSnapshot, read_snapshot
from skills.types import SkillError

_log = logging.getLogger(__name__)

NAME = "run_skill_script"
MAX_ARGS = 32
FILES_CHANGED = "the skill's files changed after the card was shown"


class RunScriptArgs(ToolArgs):
    # Arguments are passed exactly as given: no stripping, numbers become strings.
    model_config = ConfigDict(
        extra="forbid", frozen=True, str_strip_whitespace=False, coerce_numbers_to_str=True
    )

    skill: str = Field(description="the name of a skill active in this conversation")
    script: str = Field(description="a file in the skill's scripts/ folder, e.g. scripts/x.py")
    args: list[Annotated[str, StringConstraints(max_length=4096)]] = Field(
        default_factory=list, max_length=MAX_ARGS, description="command-line arguments"
    )

    @field_validator("args", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """Small models send the list as a JSON string."""
        if isinstance(value, str) and value.strip().startswith("["):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value

    @field_validator("args")
    @classmethod
    def _no_nul(cls, value: list[str]) -> list[str]:
        if any("\x00" in arg for arg in value):
            raise ValueError("an argument contains a NUL character")
        return value


def run_hash(
    skill: str, script: ScriptFile | str, sha256: str, args: list[str], mode: str, files: str
) -> str:
    """What an approval is bound to: the skill, the script and its content, the arguments,
    the mode the turn asked in and the hash of all the skill's files (`files`)."""
    relative = script.relative if isinstance(script, ScriptFile) else script
    canonical = json.dumps([skill, relative, sha256, args, mode, files], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class SkillScripts:
    """The tool's state: settings, whether scripts can run here, and its collaborators."""

    def __init__(
        self,
        settings: Settings,
        skills: SkillUse,
        approvals: ApprovalService,
        actions: ActionLog,
    ) -> None:
        self.settings = settings
        self.secrets = tuple(settings.secrets())  # never shown, stored or given back
        # Arguments that hold a secret, until their card is decided: kept in memory only,
        # never in the database.
        self.held = HeldArguments()
        self.mode = settings.skills.scripts
        self.skills = skills
        self.approvals = approvals
        self.actions = actions
        self.problem = script_sandbox_problem(settings)
        if self.problem is not None:
            _log.warning("skill scripts are not offered: %s", self.problem)
        gap = process_limit_gap(self.mode)
        if gap is not None:
            _log.warning("%s", gap)
        skills.scripts_runnable = self.runnable

    @property
    def runnable(self) -> bool:
        return self.mode != "disabled" and self.problem is None

    def offered(self, ctx: TurnContext) -> bool:
        """Only where a skill active in this conversation ships scripts."""
        if not self.runnable:
            return False
        allowed = self.skills.allowed(ctx.channel_scope)
        return any(
            list_scripts(skill)
            for skill in self.skills.get_active(ctx.conversation.key)
            if allowed is None or skill.name in allowed
        )

    def tool(self) -> BuiltinTool:
        where = WHERE.get(self.mode, "")
        description = (
            "Run a script from the scripts/ folder of a skill active in this conversation, "
            f"{where}; a person approves each run on a card first. Returns its output."
        )
        return BuiltinTool(
            NAME,
            description,
            Kind.ACTION,
            RunScriptArgs,
            self.run,
            self.resume,
            when=self.offered,
        )

    async def run(self, call: Call, args: RunScriptArgs) -> ToolOutput:
        ctx = call.ctx
        if not self.runnable:
            return ToolError("skill scripts cannot run here; tell the person")
        skill, script = await self.skills.find_script(
            ctx.conversation.key, args.skill, args.script, ctx.channel_scope
        )
        snapshot = await asyncio.to_thread(read_snapshot, skill.folder)
        if snapshot.script(script.relative) != script:
            raise SkillError(f"{script.relative} changed while it was read; ask again")
        exact = list(args.args)
        shown = redact_value(exact, known=self.secrets)
        arguments = {"skill": skill.name, "script": script.relative, "args": shown}
        hashes = {"sha256": script.sha256, "files_sha256": snapshot.sha256}
        action = await self.actions.record(
            f"skill:{skill.name}/{script.relative}",
            {**arguments, **hashes},
            requester=user_scope(ctx.author),
            channel_scope=ctx.channel_scope,
            conversation=dataclasses.asdict(ctx.conversation),
            approval=BY_CARD,
        )
        card = script_card(
            skill.name,
            script,
            exact,
            asked_by=ctx.author.name or ctx.author.id,
            mode=self.mode,
            limits=self.settings.skills,
            snapshot=snapshot,
            secrets=self.secrets,
        )
        if not self.approvals.fits_card(ctx.conversation, card):
            await self.actions.close(action.id, "declined", None)
            return ToolError(
                "the arguments are too long to show on a card, so this cannot be "
                "approved; tell the person and use shorter arguments"
            )
        payload = ScriptRun(
            skill=skill.name,
            script=script.relative,
            args=shown,
            sha256=script.sha256,
            files_sha256=snapshot.sha256,
            files=len(snapshot.files),
            mode=self.mode,
            hash=run_hash(skill.name, script, script.sha256, exact, self.mode, snapshot.sha256),
            held=self.held.keep(exact) if shown != exact else "",
            action_id=action.id,
        )
        proposal = await self.approvals.propose(
            ACTION, ctx.conversation, ctx.author, payload.to_json(), card, call.saved_turn()
        )
        await self.actions.attach_proposal(action.id, proposal.id)
        return Suspend(proposal)

    async def resume(self, ctx: TurnContext, proposal: Proposal) -> ToolResult:
        payload = ScriptRun.from_json(proposal.payload)
        exact = self.held.take(payload.held)  # held until the decision only
        if proposal.status != "approved":
            return await close_unapproved(self.actions, self.approvals, proposal, payload)
        try:
            args = self._approved_args(payload, exact)
            script, snapshot = await self._approved_script(payload, args)
        except (ScriptError, SkillError) as exc:
            return await self._not_run(proposal, payload, str(exc))
        await still_held()
        try:
            await self.actions.start(payload.action_id, proposal.decided_by)
        except ValueError:
            return ToolError("this script run was already carried out")
        output = await self._run(payload.action_id, snapshot, script, args)
        await self.approvals.update_card(proposal)
        return output

    def _approved_args(self, payload: ScriptRun, exact: list[str] | None) -> list[str]:
        """The exact arguments of the card: `exact`, from memory, when they held a secret."""
        if not payload.held:
            return list(payload.args)
        if exact is None:
            raise ScriptError(LOST)
        return exact

    async def _approved_script(
        self, payload: ScriptRun, args: list[str]
    ) -> tuple[ScriptFile, SkillSnapshot]:
        """The script and a fresh read of all its skill's files exactly as approved, or
        ScriptError saying why not. What runs is staged from that read alone."""
        name, relative, files = payload.skill, payload.script, payload.files_sha256
        if files is None:
            raise ScriptError(
                "its card was made by an earlier lorebot that bound only the script, not "
                "all of the skill's files"
            )
        expected = run_hash(name, relative, payload.sha256, args, payload.mode, files)
        if expected != payload.hash:
            raise ScriptError("the run changed after it was approved")
        if payload.mode != self.mode:
            raise ScriptError(
                f"skills.scripts changed from {payload.mode} to {self.mode} since the card"
            )
        if not self.runnable:
            raise ScriptError(self.problem or "skill scripts are disabled")
        skill = self.skills.catalog.get(name)
        if skill is None:
            raise ScriptError(f"the skill {name} is gone")
        if read_script(skill, relative).sha256 != payload.sha256:
            raise ScriptError(f"{relative} changed after the card was shown")
        snapshot = await asyncio.to_thread(read_snapshot, skill.folder)
        script = snapshot.script(relative)
        if script is None or script.sha256 != payload.sha256:
            raise ScriptError(f"{relative} changed after the card was shown")
        if snapshot.sha256 != files:
            raise ScriptError(FILES_CHANGED)
        return script, snapshot

    async def _not_run(self, proposal: Proposal, payload: ScriptRun, why: str) -> ToolError:
        await not_run(self.actions, self.approvals, proposal, payload, why)
        return ToolError(
            f"the script was not run: {why}. If it is still wanted, call {NAME} again "
            "so the person sees the current version."
        )

    async def _run(
        self, action_id: int, snapshot: SkillSnapshot, script: ScriptFile, args: list[str]
    ) -> ToolResult:
        """Run it once and record the outcome: ok on exit status 0, otherwise error."""
        try:
            env = {
                key: resolve_secret(value, "skills.script_env setting")
                for key, value in self.settings.skills.script_env.items()
            }
        except ConfigError as exc:
            await self.actions.finish(action_id, "error", f"not run: {exc}", 0)
            return ToolError(f"the script was not run: {exc}")
        limits = Limits.of(self.settings.skills)
        try:
            result = await run_script(
                snapshot, script, args, mode=self.mode, limits=limits, env=env
            )
        except ScriptError as exc:
            await self.actions.finish(action_id, "error", f"not run: {exc}", 0)
            return ToolError(f"the script was not run: {exc}")
        except Exception:
            _log.exception("action %d %s could not be run", action_id, script.relative)
            await self.actions.finish(action_id, "error", "lorebot failed to run it", 0)
            return ToolError("lorebot failed to run the script; tell the person")
        referenced = [env[k] for k, v in self.settings.skills.script_env.items() if v != env[k]]
        known = [*self.secrets, *referenced]
        text = self._output(result, known)
        outcome = "ok" if result.ok else "error"
        await finish_run(self.actions, action_id, outcome, text, result.duration_ms)
        _log.info(
            "action %d %s: %s in %d ms",
            action_id,
            script.relative,
            self._status(result, limits),
            result.duration_ms,
        )
        if outcome == "ok":
            return Ok(text or "(done, no output)")
        return ToolError(f"the script failed ({self._status(result, limits)}):\n{text}".rstrip())

    def _status(self, result: ScriptResult, limits: Limits) -> str:
        if result.escaped:
            return (
                f"timed out after {limits.timeout_s:g} s; it was killed, but a process it "
                "started in a session of its own is still running on the host"
            )
        if result.exit_status is None:
            return (
                f"timed out after {limits.timeout_s:g} s; it and every process it started "
                "were killed"
            )
        return result.status_text()

    def _output(self, result: ScriptResult, known: list[str]) -> str:
        """stdout, then stderr, scrubbed of secrets; says how much was cut."""
        parts = []
        if result.stdout:
            parts.append(redact(result.stdout, known))
        if result.stderr:
            parts.append("stderr:\n" + redact(result.stderr, known))
        if result.dropped:
            parts.append(f"[… {result.dropped} more bytes of output cut]")
        return "\n".join(parts)


def script_tools(
    settings: Settings, skills: SkillUse, approvals: ApprovalService, actions: ActionLog
) -> list[BuiltinTool]:
    """run_skill_script; always present so a card decided after a restart is finished,
    offered only where scripts can run."""
    return [SkillScripts(settings, skills, approvals, actions).tool()]
