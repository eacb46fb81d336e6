"""Actions: the operator's MCP tools as model tools.

Nothing with side effects runs without a person's ✅: a call runs at once only when its
tool is on the server's `allow` list, was allowed in this channel by an admin (♾️), or is
annotated read-only by a `trusted` server. Every other call becomes a card that shows
exactly what will run (the complete, redacted arguments, every character visible), bound
to a hash of the server (its identity: command and arguments, or URL), tool and arguments
that is checked again right before the call. What a tool returns is scrubbed of every
configured secret before the model, the card or the database sees it. Every action is
recorded, and every call that was sent ends with an outcome (ok, error or unknown).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from bot.actions.held import LOST
from bot.actions.mcp import McpServer
from bot.actions.mcp_values import CallResult, RemoteTool, ServerUnavailable, ms_since
from bot.approvals.kinds.action import ACTION, McpCall, ScriptRun, mcp_card
from bot.approvals.service import ApprovalService
from bot.context.scopes import user_scope
from bot.context.turn import TurnContext
from bot.fencing import still_held
from bot.model.arguments import coerce_arguments
from bot.tools.base import Call, Kind, Ok, Suspend, Toolbox, ToolError, ToolOutput, ToolResult
from bot.tools.schemas import flatten, validate
from memory.policy.redaction import redact, redact_value
from memory.stores.actions import (
    BY_ALLOW_LIST,
    BY_ALLOWANCE,
    BY_CARD,
    BY_TRUST,
    ActionLog,
    finish_run,
)
from memory.stores.proposals import Proposal

_log = logging.getLogger(__name__)

SEPARATOR = "__"


class NotRunnable(Exception):
    """An approved call that the last check before running refused; the message says why."""


def model_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by: unambiguous, as server names hold no
    underscores."""
    return f"{server}{SEPARATOR}{tool}"


def call_hash(server: str, server_id: str, tool: str, arguments: dict[str, Any]) -> str:
    """What an approval is bound to: the server (its name and identity), the tool and the
    canonical arguments."""
    canonical = json.dumps(
        [server, server_id, tool, arguments], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


async def close_unapproved(
    actions: ActionLog, approvals: ApprovalService, proposal: Proposal, run: McpCall | ScriptRun
) -> Ok:
    """Record an action whose card was declined or expired, finish its card, and return
    what the model is told."""
    outcome = "expired" if proposal.status == "expired" else "declined"
    await actions.close(run.action_id, outcome, proposal.decided_by)
    await approvals.update_card(proposal)
    return Ok(ACTION.resume_message(proposal))


async def not_run(
    actions: ActionLog,
    approvals: ApprovalService,
    proposal: Proposal,
    run: McpCall | ScriptRun,
    why: str,
) -> None:
    """An approved action refused at the last check: recorded as declined, and its card says
    why it was not run."""
    await actions.close(run.action_id, "declined", proposal.decided_by)
    marked = await approvals.proposals.mark(proposal.id, why, failed=True)
    await approvals.update_card(marked)
    _log.info("action of proposal %d not run: %s", proposal.id, why)


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
        secrets: Sequence[str] = (),
    ) -> None:
        self.server = server
        self.remote = remote
        self.approvals = approvals
        self.actions = actions
        self.result_max_chars = result_max_chars
        self.secrets = tuple(secrets)  # configured secret values: never shown or stored
        self.name = model_name(server.name, remote.name)

    # The server's timeout governs a call (see `_call`), never the turn's tool timeout.
    bounds_itself = True

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

    async def _exemption(self, ctx: TurnContext, remote: RemoteTool) -> str | None:
        """Why this call may run without a card, or None: it needs one."""
        settings = self.server.settings
        if remote.name in settings.allow:
            return BY_ALLOW_LIST
        # An untrusted server's annotations are a stranger's word and exempt nothing.
        if settings.trust == "trusted" and remote.hints.read_only:
            return BY_TRUST
        if await self.actions.allowed(ctx.channel_scope, self.name, self.server.identity):
            return BY_ALLOWANCE
        return None

    def _current(self) -> RemoteTool | None:
        """The tool as the server lists it now: a turn may have started before the server
        changed its annotations or schema, and the call is decided on what holds now."""
        return self.server.tool(self.remote.name)

    async def run(self, call: Call, arguments: dict[str, Any]) -> ToolOutput:
        ctx = call.ctx
        if not self.server.connected:
            return ToolError(
                f"server {self.server.name} is unavailable right now; say so and go on"
            )
        await self.server.fetch_tools()
        remote = self._current()
        if remote is None:
            return ToolError(f"server {self.server.name} no longer offers {self.remote.name}")
        if remote.input_schema != self.remote.input_schema:
            validate(remote.input_schema, arguments, self.name)
        exemption = await self._exemption(ctx, remote)
        action = await self.actions.record(
            self.name,
            arguments,
            requester=user_scope(ctx.author),
            channel_scope=ctx.channel_scope,
            conversation=dataclasses.asdict(ctx.conversation),
            approval=exemption or BY_CARD,
        )
        if exemption is not None:
            await still_held()
            await self.actions.start(action.id)
            return await self._call(action.id, arguments, remote)
        card = mcp_card(
            self.server.name,
            remote.name,
            arguments,
            asked_by=ctx.author.name or ctx.author.id,
            badges=remote.hints.badges,
            trusted=self.server.settings.trust == "trusted",
            admins_only=self.server.settings.approvers == "admins",
            secrets=self.secrets,
        )
        if not self.approvals.fits_card(ctx.conversation, card):
            await self.actions.close(action.id, "declined", None)
            return ToolError(
                "the arguments are too long to show on a card, so this cannot be "
                "approved; tell the person and use shorter arguments"
            )
        digest = call_hash(self.server.name, self.server.identity, remote.name, arguments)
        shown = redact_value(arguments, known=self.secrets)
        # Secrets never reach the database: the exact arguments wait in memory only.
        held = self.server.held.keep(arguments) if shown != arguments else ""
        payload = McpCall(
            server=self.server.name,
            server_id=self.server.identity,
            tool=remote.name,
            arguments=shown,
            held=held,
            hash=digest,
            action_id=action.id,
            approvers=self.server.settings.approvers,
        )
        proposal = await self.approvals.propose(
            ACTION, ctx.conversation, ctx.author, payload.to_json(), card, call.saved_turn()
        )
        await self.actions.attach_proposal(action.id, proposal.id)
        return Suspend(proposal)

    async def resume(self, ctx: TurnContext, proposal: Proposal) -> ToolResult:
        payload = McpCall.from_json(proposal.payload)
        exact = self.server.held.take(payload.held)  # held until the decision only
        if proposal.status != "approved":
            return await close_unapproved(self.actions, self.approvals, proposal, payload)
        try:
            arguments, remote = self._approved(payload, exact)
        except NotRunnable as exc:
            await not_run(self.actions, self.approvals, proposal, payload, str(exc))
            return ToolError(f"it was not run: {exc}")
        await still_held()
        try:
            await self.actions.start(payload.action_id, proposal.decided_by)
        except ValueError:
            return ToolError("this action was already run")
        try:
            return await self._call(payload.action_id, arguments, remote)
        finally:  # whatever happened, the card says how it ended
            await self.approvals.update_card(proposal)

    def _approved(
        self, payload: McpCall, exact: dict[str, Any] | None
    ) -> tuple[dict[str, Any], RemoteTool]:
        """The exact arguments (`exact` when they were held in memory) and the tool as
        approved, or NotRunnable saying why not."""
        if payload.server_id is None:
            raise NotRunnable("the card was made by an earlier version of lorebot; ask again")
        if payload.server_id != self.server.identity:
            raise NotRunnable(
                f"the MCP server {self.server.name} was changed since the card (it is now "
                "another command, URL or environment); ask again so the card shows the server "
                "as it is"
            )
        arguments = payload.arguments if not payload.held else exact
        if arguments is None:
            raise NotRunnable(f"{LOST}; ask again")
        digest = call_hash(self.server.name, self.server.identity, self.remote.name, arguments)
        if digest != payload.hash:
            raise NotRunnable("the call changed after it was approved")
        remote = self._current()
        if remote is None:
            raise NotRunnable(f"the server no longer offers {self.remote.name}")
        return arguments, remote

    async def _call(
        self, action_id: int, arguments: dict[str, Any], remote: RemoteTool
    ) -> ToolResult:
        """Run the call once (again only when a trusted server says the tool is read-only or
        idempotent and the connection was lost) and record its outcome; the model's text
        says exactly that. The server's `timeout_s` bounds each try; a call cut off in any
        other way (lorebot stopping) is recorded as outcome unknown."""
        timeout = self.server.settings.timeout_s
        started = time.monotonic()
        try:
            result = await self.server.call(remote.name, arguments, timeout)
            retry = result.outcome == "unknown" and self._may_retry(remote)
            if retry and await self.server.wait_connected(timeout):
                with contextlib.suppress(ServerUnavailable):
                    result = await self.server.call(remote.name, arguments, timeout)
        except ServerUnavailable as exc:
            result = CallResult("error", f"not run: {exc}", 0)
        except asyncio.CancelledError:
            cut = CallResult("unknown", "lorebot stopped while it ran", ms_since(started))
            await asyncio.shield(self._record(action_id, cut))
            raise
        except Exception as exc:
            _log.exception("action %d %s failed in lorebot", action_id, self.name)
            result = CallResult(
                "unknown", f"lorebot failed while it ran ({type(exc).__name__})", ms_since(started)
            )
        text = await self._record(action_id, result)
        return self._for_model(result.outcome, text)

    async def _record(self, action_id: int, result: CallResult) -> str:
        """Store how the call ended; the output as stored (scrubbed of secrets)."""
        text = redact(result.text, self.secrets)
        await finish_run(self.actions, action_id, result.outcome, text, result.duration_ms)
        _log.info(
            "action %d %s: %s in %d ms", action_id, self.name, result.outcome, result.duration_ms
        )
        return text

    def _may_retry(self, remote: RemoteTool) -> bool:
        """Only a trusted server's word allows a second try: "at most once per card" holds
        for every tool of an untrusted one."""
        if self.server.settings.trust != "trusted":
            return False
        return remote.hints.read_only or remote.hints.idempotent

    def _for_model(self, outcome: str, text: str) -> ToolResult:
        if len(text) > self.result_max_chars:
            cut = len(text) - self.result_max_chars
            text = f"{text[: self.result_max_chars]}\n[… {cut} more characters cut]"
        if outcome == "ok":
            return Ok(text or "(done, no output)")
        if outcome == "error":
            return ToolError(f"the tool reported a failure: {text}")
        return Ok(
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
    secrets: Sequence[str] = (),
) -> None:
    """Replace a server's tools in the toolbox with the ones it lists now."""
    prefix = f"{server.name}{SEPARATOR}"
    toolbox.remove([name for name in toolbox.names if name.startswith(prefix)])
    toolbox.add(
        McpTool(
            server,
            remote,
            approvals,
            actions,
            result_max_chars=result_max_chars,
            secrets=secrets,
        )
        for remote in server.tools
    )
