"""Actions: the operator's MCP tools as model tools.

Nothing with side effects runs without a person's ✅: a call runs at once only when its
tool is on the server's `allow` list, was allowed in this channel by an admin (♾️), or is
annotated read-only by a `trusted` server. Every other call becomes a card that shows
exactly what will run (the complete, redacted arguments), bound to a hash of the server,
tool and arguments that is checked again right before the call. Every action is recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from typing import Any

from bot.approvals import ACTION, ApprovalService
from bot.mcp_servers import CallResult, McpServer, RemoteTool, ServerUnavailable
from bot.scopes import user_scope
from bot.tool_args import coerce_arguments
from bot.tools.base import Call, Kind, Suspend, Toolbox, ToolOutput
from bot.tools.schemas import flatten, validate
from bot.turn_context import TurnContext
from memory.actions import BY_ALLOW_LIST, BY_ALLOWANCE, BY_CARD, BY_TRUST, ActionLog
from memory.proposals import Proposal
from memory.secrets import redact, redact_value

_log = logging.getLogger(__name__)

SEPARATOR = "__"
DECLINED = "the person declined; it was not run. Do not try it again."
EXPIRED = "nobody decided in time, so it was not run. Do not try it again unless asked."


def model_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by: unambiguous, as server names hold no
    underscores."""
    return f"{server}{SEPARATOR}{tool}"


def call_hash(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """What an approval is bound to: the server, the tool and the canonical arguments."""
    canonical = json.dumps([server, tool, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


async def close_unapproved(
    actions: ActionLog,
    approvals: ApprovalService,
    proposal: Proposal,
    *,
    declined: str,
    expired: str,
) -> str:
    """Record an action whose card was declined or expired, finish its card, and return
    what the model is told (`declined` or `expired`)."""
    outcome = "expired" if proposal.status == "expired" else "declined"
    await actions.close(int(proposal.payload["action_id"]), outcome, proposal.decided_by)
    await approvals.update_card(proposal)
    return expired if outcome == "expired" else declined


def format_arguments(arguments: dict[str, Any]) -> str:
    """The arguments as a person reads them on a card: complete, secrets redacted."""
    return json.dumps(redact_value(arguments), indent=2, ensure_ascii=False, sort_keys=True)


class McpTool:
    """One tool of one MCP server, as the model sees and calls it."""

    kind = Kind.ACTION
    writes_memory = False

    def __init__(
        self,
        server: McpServer,
        remote: RemoteTool,
        approvals: ApprovalService,
        actions: ActionLog,
        *,
        result_max_chars: int,
    ) -> None:
        self.server = server
        self.remote = remote
        self.approvals = approvals
        self.actions = actions
        self.result_max_chars = result_max_chars
        self.name = model_name(server.name, remote.name)

    def spec(self) -> dict[str, Any]:
        hints = self.remote.hints.badges
        said = f" [{', '.join(hints)}]" if hints else ""
        description = f"{self.remote.description}{said} (MCP server {self.server.name})"
        parameters = flatten(self.remote.input_schema)
        return {
            "type": "function",
            "function": {"name": self.name, "description": description, "parameters": parameters},
        }

    def offered(self, ctx: TurnContext) -> bool:
        channels = self.server.settings.channels
        return not channels or ctx.channel_scope in channels

    def parse(self, raw: Any) -> dict[str, Any]:
        arguments = coerce_arguments(raw)
        validate(self.remote.input_schema, arguments, self.name)
        return arguments

    async def _exemption(self, ctx: TurnContext) -> str | None:
        """Why this call may run without a card, or None: it needs one."""
        settings = self.server.settings
        if self.remote.name in settings.allow:
            return BY_ALLOW_LIST
        # An untrusted server's annotations are a stranger's word and exempt nothing.
        if settings.trust == "trusted" and self.remote.hints.read_only:
            return BY_TRUST
        if await self.actions.allowed(ctx.channel_scope, self.name):
            return BY_ALLOWANCE
        return None

    async def run(self, call: Call, arguments: dict[str, Any]) -> ToolOutput:
        ctx = call.ctx
        if not self.server.connected:
            return f"error: server {self.server.name} is unavailable right now; say so and go on"
        exemption = await self._exemption(ctx)
        action = await self.actions.record(
            self.name, arguments, requester=user_scope(ctx.author), channel_scope=ctx.channel_scope,
            conversation=dataclasses.asdict(ctx.conversation), approval=exemption or BY_CARD,
        )  # fmt: skip
        if exemption is not None:
            await self.actions.start(action.id)
            return await self._call(action.id, arguments)
        card = self._card(ctx, arguments)
        if not self.approvals.fits_card(ctx.conversation, card):
            await self.actions.close(action.id, "declined", None)
            return (
                "error: the arguments are too long to show on a card, so this cannot be "
                "approved; tell the person and use shorter arguments"
            )
        digest = call_hash(self.server.name, self.remote.name, arguments)
        shown = redact_value(arguments)
        if shown != arguments:
            # Secrets never reach the database: the exact arguments wait in memory only.
            self.server.held[digest] = arguments
        payload = {
            "server": self.server.name,
            "tool": self.remote.name,
            "arguments": shown,
            "held": shown != arguments,
            "hash": digest,
            "action_id": action.id,
            "approvers": self.server.settings.approvers,
            "turn": call.saved_turn(),
        }
        proposal = await self.approvals.propose(
            ACTION, ctx.conversation, ctx.author, payload, card, "run it"
        )
        await self.actions.attach_proposal(action.id, proposal.id)
        return Suspend(proposal)

    def _card(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
        hints = self.remote.hints.badges
        lines = [
            f"⚙️ Run `{self.remote.name}` on the MCP server `{self.server.name}`?",
            f"Asked by {ctx.author.name or ctx.author.id}.",
        ]
        if hints:
            lines.append("Annotations: " + ", ".join(hints))
        if self.server.settings.trust != "trusted":
            lines.append("(annotations of an untrusted server are the server's own claim)")
        lines.append(f"Arguments:\n```\n{format_arguments(arguments)}\n```")
        if self.server.settings.approvers == "admins":
            lines.append("Only an admin can approve this tool.")
        return "\n".join(lines)

    async def resume(self, ctx: TurnContext, proposal: Proposal) -> str:
        payload = proposal.payload
        action_id = int(payload["action_id"])
        if proposal.status != "approved":
            return await close_unapproved(
                self.actions, self.approvals, proposal, declined=DECLINED, expired=EXPIRED
            )
        arguments = payload["arguments"]
        if payload.get("held"):
            arguments = self.server.held.pop(payload["hash"], None)
            if arguments is None:
                await self.actions.close(action_id, "declined", proposal.decided_by)
                return (
                    "error: its arguments held a secret, which lorebot keeps only in memory, "
                    "and lorebot restarted since, so it was not run; ask again"
                )
        if call_hash(self.server.name, self.remote.name, arguments) != payload["hash"]:
            await self.actions.close(action_id, "declined", proposal.decided_by)
            return "error: the call changed after it was approved, so it was not run"
        try:
            await self.actions.start(action_id, proposal.decided_by)
        except ValueError:
            return "error: this action was already run"
        output = await self._call(action_id, arguments)
        await self.approvals.update_card(proposal)
        return output

    async def _call(self, action_id: int, arguments: dict[str, Any]) -> str:
        """Run the call once (again only when the tool is read-only or idempotent and the
        connection was lost) and record its outcome; the model's text says exactly that."""
        timeout = self.server.settings.timeout_s
        try:
            result = await self.server.call(self.remote.name, arguments, timeout)
            retry = result.outcome == "unknown" and self._may_retry()
            if retry and await self.server.wait_connected(timeout):
                result = await self.server.call(self.remote.name, arguments, timeout)
        except ServerUnavailable as exc:
            result = CallResult("error", f"not run: {exc}", 0)
        text = redact(result.text)
        await self.actions.finish(action_id, result.outcome, text, result.duration_ms)
        _log.info(
            "action %d %s: %s in %d ms", action_id, self.name, result.outcome, result.duration_ms
        )
        return self._for_model(result.outcome, text)

    def _may_retry(self) -> bool:
        hints = self.remote.hints
        return hints.read_only or hints.idempotent

    def _for_model(self, outcome: str, text: str) -> str:
        if len(text) > self.result_max_chars:
            cut = len(text) - self.result_max_chars
            text = f"{text[: self.result_max_chars]}\n[… {cut} more characters cut]"
        if outcome == "ok":
            return text or "(done, no output)"
        if outcome == "error":
            return f"error: the tool reported a failure: {text}"
        return (
            f"outcome unknown: {text}. It may or may not have happened; do not call it "
            "again, tell the person to check."
        )


def sync_server_tools(
    toolbox: Toolbox,
    server: McpServer,
    approvals: ApprovalService,
    actions: ActionLog,
    *,
    result_max_chars: int,
) -> None:
    """Replace a server's tools in the toolbox with the ones it lists now."""
    prefix = f"{server.name}{SEPARATOR}"
    toolbox.remove([name for name in toolbox.names if name.startswith(prefix)])
    toolbox.add(
        McpTool(server, remote, approvals, actions, result_max_chars=result_max_chars)
        for remote in server.tools
    )
