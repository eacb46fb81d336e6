"""Replies that grow in Slack while the model writes them (chat.startStream, appendStream,
stopStream), and the one message posted whole where Slack will not stream.

A stream shows the core's Markdown through Slack's `markdown_text`, which renders standard
Markdown, while a posted reply is mrkdwn (`to_mrkdwn`): the two render some markup
differently, so a finished stream is edited to the mrkdwn a plain post would have, unless
its text reads the same in both.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.base import ConversationRef, PostedMessage, UserRef
from adapters.slack.text import SLACK_TEXT_LIMIT, for_stream, renders_alike

_log = logging.getLogger(__name__)

STREAM_INTERVAL_S = 2.0
"""How often a streamed reply grows: chat.appendStream is a Tier 4 method (100+ calls a
minute per workspace, shared by every reply being written), so one call per 2 s keeps the
default two concurrent model calls at 60 a minute and even three under 100."""

NO_THREAD = "no thread"
NOT_STREAMING = "message_not_in_streaming_state"
_FOR_GOOD = frozenset(
    {
        "not_allowed",
        "missing_scope",
        "unknown_method",
        "invalid_arguments",
        "not_allowed_token_type",
        "method_deprecated",
        "deprecated_endpoint",
        "feature_not_enabled",
        "access_denied",
        "no_permission",
        "team_access_not_granted",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
    }
)
"""Refusals that every later stream would get too: streaming is turned off for good."""


@dataclass
class StreamGate:
    """Whether the adapter streams at all, and which refusals the log has named already."""

    allowed: bool = True
    _said: set[str] = field(default_factory=set)

    def refused(self, method: str, error: str) -> None:
        """Say once in the log why a reply is posted whole; a refusal that will recur turns
        streaming off for the adapter."""
        for_good = error in _FOR_GOOD
        if for_good:
            self.allowed = False
        key = f"{method} {error}"
        if key in self._said:
            _log.debug("Slack refused %s (%s) again; the reply is shown whole", method, error)
            return
        self._said.add(key)
        if error == NO_THREAD:
            _log.info(
                "Slack streams replies only in threads, so replies at the top of a DM are "
                "posted whole when they are done"
            )
        elif for_good:
            _log.info(
                "Slack refused %s (%s), so lorebot shows its replies whole when they are "
                "done instead of streaming them",
                method,
                error,
            )
        else:
            _log.info(
                "Slack refused %s (%s), so this reply is shown whole when it is done",
                method,
                error,
            )


class StreamHost(Protocol):
    """What a stream needs of the Slack adapter."""

    stream_gate: StreamGate
    team_id: str | None

    @property
    def web(self) -> AsyncWebClient:
        """The Web API client."""

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        """Post `text` as one message, as mrkdwn."""

    async def edit(self, posted: PostedMessage, text: str) -> None:
        """Replace a message's text with `text` as mrkdwn (stopping a stream first)."""

    def remember_thread(self, channel: str, thread_ts: str) -> None:
        """Note a thread the bot replied in, so later replies there reach it."""


async def stop_stream(client: AsyncWebClient, posted: PostedMessage, markdown: str = "") -> bool:
    """End a message's stream, appending `markdown`; False when Slack refused (the message
    was not streaming any more, or another failure the caller mends with an edit)."""
    try:
        await client.chat_stopStream(
            channel=posted.conversation.channel_id,
            ts=posted.message_id,
            markdown_text=markdown or None,
        )
    except SlackApiError as exc:
        _log.debug("Slack did not stop the stream of %s: %s", posted.message_id, exc)
        return False
    except (aiohttp.ClientError, TimeoutError) as exc:
        _log.debug("could not stop the stream of %s: %r", posted.message_id, exc)
        return False
    return True


class SlackReplyStream:
    """One reply streamed into a thread, or posted whole at `finish` where Slack will not
    stream it (no thread, or a refusal)."""

    def __init__(self, host: StreamHost, conversation: ConversationRef, recipient: UserRef):
        self._host = host
        self._conversation = conversation
        self._recipient = recipient
        self._posted: PostedMessage | None = None
        self._shown = ""  # the core's text the stream shows
        self._live = True  # false once this reply stopped streaming
        self._edited = False  # the stream gave way to edits of the message

    @property
    def posted(self) -> PostedMessage | None:
        """The message once it exists in Slack."""
        return self._posted

    async def show(self, text: str) -> None:
        """Append what `text` adds to the message (the first text starts the stream). A
        text that does not extend what is shown (the model's words before a tool call gave
        way to its answer) ends the stream, since a stream cannot take words back, and
        the message shows it, and what follows, by edits."""
        if not self._live or not text.strip() or text == self._shown:
            return
        if self._posted is None:
            await self._start(text)
        elif self._edited or not text.startswith(self._shown):
            await self._replace(text)
        else:
            await self._append(text)

    async def _replace(self, text: str) -> None:
        assert self._posted is not None
        if not self._edited:
            self._edited = True
            await stop_stream(self._host.web, self._posted)
        await self._host.edit(self._posted, text)
        self._shown = text

    async def _start(self, text: str) -> None:
        conversation = self._conversation
        thread_ts = conversation.thread_id
        if not self._host.stream_gate.allowed:
            self._live = False
            return
        if thread_ts is None:
            self._refuse("chat.startStream", NO_THREAD)
            return
        call = self._host.web.chat_startStream(
            channel=conversation.channel_id,
            thread_ts=thread_ts,
            markdown_text=for_stream(text),
            recipient_user_id=self._recipient.id,
            recipient_team_id=conversation.team_id or self._host.team_id,
        )
        response = await self._call("chat.startStream", call)
        if response is None:
            return
        self._posted = PostedMessage(conversation, str(response.get("ts") or ""))
        self._shown = text
        if not conversation.is_dm:
            self._host.remember_thread(conversation.channel_id, thread_ts)

    async def _append(self, text: str) -> None:
        assert self._posted is not None
        call = self._host.web.chat_appendStream(
            channel=self._posted.conversation.channel_id,
            ts=self._posted.message_id,
            markdown_text=for_stream(text[len(self._shown) :]),
        )
        if await self._call("chat.appendStream", call) is not None:
            self._shown = text

    async def _call(
        self, method: str, call: Awaitable[AsyncSlackResponse]
    ) -> AsyncSlackResponse | None:
        """One stream call; a refusal ends streaming for this reply, said once in the log."""
        try:
            return await call
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "unknown_error")
        except (aiohttp.ClientError, TimeoutError) as exc:
            error = type(exc).__name__
        self._refuse(method, error)
        return None

    def _refuse(self, method: str, error: str) -> None:
        self._live = False
        self._host.stream_gate.refused(method, error)

    async def finish(self, text: str) -> PostedMessage:
        """Make the message say exactly what `send` would post for `text`, and end the
        stream; with nothing shown yet, `text` is posted as one message."""
        posted = self._posted
        if posted is None:
            self._live = False
            self._posted = posted = await self._host.send(self._conversation, text)
            return posted
        grows = self._live and not self._edited and text.startswith(self._shown)
        self._live = False
        if grows:
            rest = for_stream(text[len(self._shown) :])
            stopped = await stop_stream(self._host.web, posted, rest)
            if stopped and renders_alike(text) and len(text) <= SLACK_TEXT_LIMIT:
                return posted  # the streamed Markdown already reads as the mrkdwn would
        elif not self._edited:
            await stop_stream(self._host.web, posted)
        await self._host.edit(posted, text)
        return posted
