"""The status under the bot's name in a Slack thread while a turn runs
(assistant.threads.setStatus): "is thinking…" first, then what the bot is doing.

Slack clears the status when the reply is posted. The calls run beside the turn, one after
another, so they never delay it; a refusal that will recur turns the status off for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.base import THINKING, Status

_log = logging.getLogger(__name__)

STATUS_WAIT_S = 2.0
"""How long a turn's end waits for its pending status calls, so a status cannot land after
the reply and show for two more minutes."""
_STATUS_TRANSIENT = frozenset({"ratelimited", "internal_error", "fatal_error", "request_timeout"})


class StatusHost(Protocol):
    """What the status line needs of the Slack adapter."""

    @property
    def web(self) -> AsyncWebClient:
        """The Web API client (raises once the adapter is closed)."""


class ThreadStatus:
    """Whether Slack lets lorebot show a thread status, and the calls that set one."""

    def __init__(self, host: StatusHost) -> None:
        self._host = host
        self._allowed = True
        self._closed = False

    @property
    def allowed(self) -> bool:
        """False once Slack refused a status for good (or the adapter closed)."""
        return self._allowed and not self._closed

    def close(self) -> None:
        """Set no more statuses: the adapter is closing."""
        self._closed = True

    @asynccontextmanager
    async def working(self, channel: str, thread_ts: str | None) -> AsyncIterator[Status]:
        """Show THINKING in the thread while the block runs, and give the block a function
        that shows another status there; a top-level DM has no thread to show one in."""
        if thread_ts is None or not self.allowed:
            yield _no_status
            return
        line = _StatusLine(self, channel, thread_ts)
        await line.show(THINKING)
        try:
            yield line.show
        finally:
            await line.settle(STATUS_WAIT_S)

    async def set(self, channel: str, thread_ts: str, text: str) -> None:
        """Set the thread's status; a refusal turns the status off for good, said once."""
        try:
            await self._host.web.assistant_threads_setStatus(
                channel_id=channel, thread_ts=thread_ts, status=text
            )
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "unknown_error")
            if error in _STATUS_TRANSIENT:
                _log.debug("Slack could not set the thread status now (%s)", error)
            elif self._allowed:
                self._allowed = False
                _log.info(
                    "Slack refused assistant.threads.setStatus (%s), so lorebot will not show "
                    "its status (“%s”) while it works; replies are not affected",
                    error,
                    THINKING,
                )
        except Exception as exc:  # the status is a courtesy: nothing about it may fail a turn
            _log.debug("could not set the Slack thread status: %r", exc)


async def _no_status(text: str) -> None:
    return None


class _StatusLine:
    """The status of one thread while a turn runs: each new text is set after the previous
    call, in the background, so statuses land in order and never hold the turn up."""

    def __init__(self, status: ThreadStatus, channel: str, thread_ts: str) -> None:
        self._status = status
        self._channel = channel
        self._thread_ts = thread_ts
        self._text = ""
        self._calls: list[asyncio.Task[None]] = []
        self._settled = False

    async def show(self, text: str) -> None:
        """Set `text` as the thread's status after the calls before it; a repeat is skipped."""
        if self._settled or text == self._text or not self._status.allowed:
            return
        self._text = text
        previous = self._calls[-1] if self._calls else None
        self._calls.append(
            asyncio.create_task(self._set(previous, text), name="slack thread status")
        )

    async def _set(self, previous: asyncio.Task[None] | None, text: str) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        if self._status.allowed:
            await self._status.set(self._channel, self._thread_ts, text)

    async def settle(self, within: float) -> None:
        """Wait up to `within` seconds for the calls still pending; cancel the rest."""
        self._settled = True
        pending = {call for call in self._calls if not call.done()}
        if pending:
            _, late = await asyncio.wait(pending, timeout=within)
            for call in late:
                call.cancel()
