"""action: an MCP tool call, or a skill script run, waiting for a person's ✅.

Its card shows exactly what will run, every argument redacted and every character visible
(`bot.approvals.card_text`); the approval is bound to a hash of it, which the tool checks
again right before it runs. The tool that asked runs it when the turn resumes, also after
the card expired (the model is told, so it never claims it ran); it is captured for
pattern extraction once it has run, and its card ends saying how the run ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from adapters.base import APPROVE, REJECT
from bot.approvals.card_text import code_block, code_line, format_arguments, inline
from bot.approvals.kinds.base import DECIDED, Allowance, Plain, Records
from bot.config.sections import SkillsSettings
from memory.policy.redaction import redact
from memory.stores.actions import ActionLog
from memory.stores.proposals import Proposal
from skills.resources import ScriptFile
from skills.snapshot import SkillSnapshot

# Where a skill script runs, by `skills.scripts`.
WHERE = {
    "sandboxed": "in a sandbox (bubblewrap): no network, only its own work folder writable",
    "host": "on the host as lorebot's own user, NOT sandboxed",
}


@dataclass(frozen=True, slots=True)
class McpCall:
    """The payload of an MCP tool call: the server (and its identity), the tool, the
    arguments (redacted; when they held a secret the exact ones wait in memory under
    `held`), the hash the approval is bound to, its action row and who may approve it."""

    declined: ClassVar[str] = "the person declined; it was not run. Do not try it again."
    expired: ClassVar[str] = (
        "nobody decided in time, so it was not run. Do not try it again unless asked."
    )

    server: str
    server_id: str | None  # None: a card made before servers had an identity
    tool: str
    arguments: dict[str, Any]
    held: str
    hash: str
    action_id: int
    approvers: str

    def to_json(self) -> dict[str, Any]:
        known = {} if self.server_id is None else {"server_id": self.server_id}
        return {
            "server": self.server,
            **known,
            "tool": self.tool,
            "arguments": self.arguments,
            "held": self.held,
            "hash": self.hash,
            "action_id": self.action_id,
            "approvers": self.approvers,
        }

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> McpCall:
        return cls(
            server=payload["server"],
            server_id=payload.get("server_id"),
            tool=payload["tool"],
            arguments=payload["arguments"],
            held=payload.get("held") or "",
            hash=payload["hash"],
            action_id=int(payload["action_id"]),
            approvers=payload.get("approvers", "requester"),
        )


@dataclass(frozen=True, slots=True)
class ScriptRun:
    """The payload of a skill script run: the skill, the script and its arguments (see
    `McpCall`), the hashes of the script and of all the skill's files, the mode it runs
    in, the hash the approval is bound to and its action row."""

    declined: ClassVar[str] = (
        "the person declined; the script was not run. Do not run it again unless asked."
    )
    expired: ClassVar[str] = (
        "nobody decided in time, so the script was not run. Do not run it again unless asked."
    )

    skill: str
    script: str
    args: list[str]
    sha256: str
    files_sha256: str | None  # None: a card of a lorebot that bound only the script
    files: int | None
    mode: str
    hash: str
    held: str
    action_id: int

    def to_json(self) -> dict[str, Any]:
        files = {} if self.files_sha256 is None else {"files_sha256": self.files_sha256}
        count = {} if self.files is None else {"files": self.files}
        return {
            "tool": self.script,
            "server": f"skill {self.skill}",
            "arguments": {"skill": self.skill, "script": self.script, "args": self.args},
            "sha256": self.sha256,
            **files,
            **count,
            "mode": self.mode,
            "hash": self.hash,
            "held": self.held,
            "action_id": self.action_id,
        }

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> ScriptRun:
        arguments = payload["arguments"]
        files = payload.get("files_sha256")
        return cls(
            skill=arguments["skill"],
            script=arguments["script"],
            args=list(arguments["args"]),
            sha256=payload["sha256"],
            files_sha256=files if isinstance(files, str) else None,
            files=payload.get("files"),
            mode=payload["mode"],
            hash=payload["hash"],
            held=payload.get("held") or "",
            action_id=int(payload["action_id"]),
        )


class ActionKind(Plain):
    """Running an MCP tool or a skill script."""

    name = "action"
    verb = "run it"
    asks = "run it"
    label = "run"
    resumes_on = DECIDED | {"expired"}

    def payload(self, proposal: Proposal) -> McpCall | ScriptRun:
        """The call or run; a script run's payload is the one with the script's hash."""
        stored = proposal.payload
        return ScriptRun.from_json(stored) if "sha256" in stored else McpCall.from_json(stored)

    def subject(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("tool", "?"))

    def always_approvable(self) -> bool:
        return True

    def allowance(self, payload: Mapping[str, Any]) -> Allowance | None:
        """A server's tool; a skill script asks at every run, whatever an admin allowed."""
        if "sha256" in payload:
            return None
        call = McpCall.from_json(payload)
        return Allowance(f"{call.server}__{call.tool}", call.server_id or "")

    def captured(self, proposal: Proposal) -> Mapping[str, Any] | None:
        return None  # when it has run

    def resume_message(self, proposal: Proposal) -> str:
        payload = self.payload(proposal)
        return payload.expired if proposal.status == "expired" else payload.declined

    async def tool_gone(self, proposal: Proposal, tool: str, actions: ActionLog) -> None:
        """An approved run is recorded as failed, an unapproved one as closed."""
        action = await actions.fetch(self.payload(proposal).action_id)
        if action.outcome != "pending":  # decided before, by another process or turn
            return
        if proposal.status == "approved":
            reason = f"not run: the tool {tool} is not available"
            await actions.finish(action.id, "error", reason, 0)
        else:
            outcome = "expired" if proposal.status == "expired" else "declined"
            await actions.close(action.id, outcome, proposal.decided_by)

    async def outcome_text(self, proposal: Proposal, records: Records) -> str:
        payload = proposal.payload
        what = f"`{payload.get('tool')}` on `{payload.get('server')}` (proposal #{proposal.id})"
        action = await records.actions.fetch_by_proposal(proposal.id)
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


ACTION = ActionKind()


def mcp_card(
    server: str,
    tool: str,
    arguments: Any,
    *,
    asked_by: str,
    badges: Sequence[str],
    trusted: bool,
    admins_only: bool,
    secrets: Sequence[str],
) -> str:
    """The card of an MCP tool call: the tool, who asked, the server's annotations (its
    own claim, unless it is trusted) and the complete, redacted arguments."""
    lines = [f"⚙️ Run `{tool}` on the MCP server `{server}`?", f"Asked by {inline(asked_by)}."]
    if badges:
        lines.append("Annotations: " + ", ".join(badges))
    if not trusted:
        lines.append("(annotations of an untrusted server are the server's own claim)")
    lines.append("Arguments:\n" + code_block(format_arguments(arguments, secrets)))
    if admins_only:
        lines.append("Only an admin can approve this tool.")
    return "\n".join(lines)


def script_card(
    skill: str,
    script: ScriptFile,
    args: list[str],
    *,
    asked_by: str,
    mode: str,
    limits: SkillsSettings,
    snapshot: SkillSnapshot,
    secrets: Sequence[str],
) -> str:
    """The card of a skill script run: where and within which limits it runs, the script's
    hash and first lines, the hash and count of all the skill's files, and the redacted
    arguments."""
    lines = [
        f"📜 Run the script `{script.relative}` of the skill `{skill}`?",
        f"Asked by {inline(asked_by)}.",
        f"Where: {WHERE[mode]}; at most {limits.script_timeout_s:g} s, "
        f"{limits.script_cpu_s} s of CPU, {limits.script_memory_mb} MiB.",
        f"Script: {len(script.data)} bytes, sha256 `{script.sha256}`",
        code_block("\n".join(code_line(redact(line)) for line in script.first_lines())),
        f"Skill files: {len(snapshot.files)} files, {snapshot.size} bytes, "
        f"sha256 `{snapshot.sha256}`",
        *_left_out(snapshot),
        "Arguments:\n" + code_block(format_arguments(args, secrets)),
        "Only these exact files run: if any of them changes before your ✅, nothing is run.",
    ]
    return "\n".join(lines)


def _left_out(snapshot: SkillSnapshot) -> list[str]:
    if not snapshot.left_out:
        return []
    shown = ", ".join(f"`{inline(redact(path))}`" for path in snapshot.left_out[:5])
    more = f" and {len(snapshot.left_out) - 5} more" if len(snapshot.left_out) > 5 else ""
    return [f"Not copied into the run (symlinks or special files): {shown}{more}"]
