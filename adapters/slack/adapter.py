"""Slack through slack-bolt's `AsyncApp`: events in over Socket Mode or HTTP, Web API out.

Socket Mode (bot token and app-level token) needs no public URL; HTTP Events mode serves
bolt's signed-request endpoint when a signing secret and a listen address are configured.
Both feed one handler, which bolt runs before it acknowledges the event (Slack hears the
acknowledgement once the core has taken the event, so an event that a lorebot which died
meanwhile never took is sent again, to any replica), and which turns the payload into the
core's `Message` / `ReactionEvent` in one place (`events`). Signing in
and the connection events arrive on live in `connection`, the `/lorebot` slash command in
`commands`, the thread status in `status`, streamed replies in `stream`, Web API refusals
in `errors`, and the cache of people's names in `users`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.base import (
    APPROVE,
    REJECT,
    Button,
    ConversationRef,
    Event,
    EventSink,
    Memberships,
    NotTaken,
    PostedMessage,
    ReplyStream,
    Status,
    UserRef,
)
from adapters.slack.buttons import card_blocks, register_buttons
from adapters.slack.commands import register_command
from adapters.slack.connection import SlackConnection, check_tokens, identify
from adapters.slack.errors import SlackRequestError as SlackRequestError
from adapters.slack.errors import describe_error, retry_handlers
from adapters.slack.events import PLATFORM, BotThreads, to_event
from adapters.slack.members import member_channels
from adapters.slack.status import ThreadStatus
from adapters.slack.stream import (
    STREAM_INTERVAL_S,
    SlackReplyStream,
    StreamGate,
    stop_stream,
)
from adapters.slack.text import fit_mrkdwn, to_mrkdwn
from adapters.slack.users import MAX_LOOKUPS_PER_MESSAGE as MAX_LOOKUPS_PER_MESSAGE
from adapters.slack.users import SlackUser as SlackUser
from adapters.slack.users import SlackUsers

_log = logging.getLogger(__name__)


_REACTION_NAMES = {APPROVE: "white_check_mark", REJECT: "x"}
_USER_UNKNOWN = frozenset({"user_not_found", "user_not_visible"})

CLOSE_GRACE_S = 5.0


class SlackAdapter:
    """lorebot in one Slack workspace."""

    platform = PLATFORM
    max_message_chars = 3900
    stream_interval_s = STREAM_INTERVAL_S

    def __init__(
        self,
        *,
        bot_token: str,
        app_token: str | None = None,
        signing_secret: str | None = None,
        listen: str | None = None,
        events_path: str = "/slack/events",
        api_base_url: str = "https://slack.com/api/",
        buttons: bool = True,
    ) -> None:
        self.http_mode = signing_secret is not None and listen is not None
        check_tokens(bot_token, app_token, http_mode=self.http_mode)
        self._bot_token = bot_token
        self._signing_secret = signing_secret or ""
        self.events_path = events_path
        self.api_base_url = api_base_url
        self.shows_buttons = buttons  # off for an app without Interactivity
        self.bot_user_id: str | None = None
        self.bot_id: str | None = None
        self.bot_name = "lorebot"
        self.team_id: str | None = None
        self.workspace_url = ""
        self._connection = SlackConnection(
            app_token=app_token, listen=listen if self.http_mode else None, events_path=events_path
        )
        self._sink: EventSink | None = None
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None
        self._inflight: set[asyncio.Task[Any]] = set()
        self._users = SlackUsers(self._user_info)
        self.threads = BotThreads()
        self._status = ThreadStatus(self)
        self.stream_gate = StreamGate()
        self._started = False
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self, sink: EventSink) -> None:
        """Identify the bot, then connect Socket Mode or open the HTTP endpoint."""
        if self._started:
            return
        self._started = True
        self._sink = sink
        self._session = aiohttp.ClientSession()
        self._client = AsyncWebClient(
            token=self._bot_token,
            base_url=self.api_base_url,
            session=self._session,
            retry_handlers=retry_handlers(),
        )
        try:
            me = await identify(self._client, self.api_base_url, self.bot_name)
            self.bot_user_id, self.bot_id, self.team_id = me.user_id, me.bot_id, me.team_id
            self.workspace_url, self.bot_name = me.workspace_url, me.name
            app = AsyncApp(
                client=self._client,
                signing_secret=self._signing_secret,
                request_verification_enabled=self.http_mode,
                # Acknowledge an event only once the core has taken it (`_on_event`).
                process_before_response=True,
                attaching_conversation_kwargs_enabled=False,
                # bolt freezes the root's level onto the loggers it creates, named after the
                # app unless given a base logger: keep them all in slack_bolt, following it.
                name="slack_bolt.lorebot",
                logger=logging.getLogger("slack_bolt"),
            )
            app.event(re.compile(".*"))(self._on_event)
            app.error(_quiet_when_not_taken)
            register_command(app, self)
            register_buttons(app, self)
            await self._connection.open(app, self._client)
        except BaseException:
            await self.close()
            raise

    @property
    def bound_address(self) -> tuple[str, int] | None:
        """Where HTTP Events mode listens, once started (the real port when given 0)."""
        return self._connection.bound_address

    @property
    def connected(self) -> bool:
        """Whether events can arrive now: the Socket Mode websocket is open (not while
        slack-sdk reconnects), or the HTTP endpoint is serving."""
        return not self._closed and self._connection.connected

    async def close(self) -> None:
        """Stop taking events, let the ones in flight reach the sink, close the clients."""
        if self._closed:
            return
        self._closed = True
        self._status.close()
        try:
            await self._connection.close()
            await self._finish_inflight()
        finally:
            self._sink = None
            session, self._session = self._session, None
            if session is not None:
                await session.close()

    async def _finish_inflight(self) -> None:
        if not self._inflight:
            return
        _, pending = await asyncio.wait(set(self._inflight), timeout=CLOSE_GRACE_S)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    async def wait_delivered(self) -> None:
        """Return once every event received so far has been handed to the sink (or dropped)."""
        while self._inflight:
            await asyncio.wait(set(self._inflight))

    # --- events in ----------------------------------------------------------------------

    async def _on_event(self, body: dict[str, Any]) -> None:
        """bolt's listener for every event. bolt acknowledges the event when it returns: the
        core has recorded it as seen and queued it by then (a turn runs on its own), so Slack
        gives an event lorebot did not take to another connection (3 s at most)."""
        await self.hand_over(lambda: to_event(body, self), f"event {body.get('event_id')}")

    async def hand_over(self, convert: Callable[[], Awaitable[Event | None]], what: str) -> None:
        """Turn a payload into the core's event and give it to the sink; tracked, so `close`
        lets it finish."""
        if self._closed:
            return
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            event = await convert()
            sink = self._sink
            if event is not None and sink is not None:
                await sink(event)
        except NotTaken:
            _log.info("left Slack %s unacknowledged: lorebot is stopping", what)
            raise  # bolt acknowledges nothing then: Slack gives it to another connection
        except Exception:
            _log.exception("could not take Slack %s", what)
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def fetch_names(self, raw: str, author_id: str) -> tuple[SlackUser, dict[str, str]]:
        """The author and the display names of the people `raw` mentions (see `SlackUsers`)."""
        return await self._users.fetch_names(raw, author_id, self.bot_user_id)

    def known_user(self, user_id: str) -> SlackUser | None:
        """The person, if already looked up; never calls Slack."""
        return self._users.peek(user_id)

    async def _user_info(self, user_id: str) -> Mapping[str, Any]:
        response = await self._api(
            "users.info", self._web.users_info(user=user_id), harmless=_USER_UNKNOWN
        )
        return response.get("user") or {}

    # --- calls out ----------------------------------------------------------------------

    @property
    def _web(self) -> AsyncWebClient:
        if self._client is None or self._closed:
            raise RuntimeError("the Slack adapter is not running")
        return self._client

    @property
    def web(self) -> AsyncWebClient:
        """The Web API client while the adapter runs."""
        return self._web

    async def _api(
        self,
        method: str,
        call: Awaitable[AsyncSlackResponse],
        *,
        channel: str | None = None,
        harmless: frozenset[str] = frozenset(),
    ) -> AsyncSlackResponse:
        """Await one Web API call; a refusal is logged as one line saying what to fix."""
        try:
            return await call
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "unknown_error")
            if error in harmless:
                return exc.response  # type: ignore[no-any-return]
            data = exc.response.data if isinstance(exc.response.data, dict) else {}
            failure = SlackRequestError(
                method, error, describe_error(error, data, channel=channel, bot_name=self.bot_name)
            )
            _log.error("%s", failure)
            raise failure from None

    def text_length(self, text: str) -> int:
        """How much of Slack's limit `text` takes once escaped and converted to mrkdwn."""
        return len(to_mrkdwn(text))

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        """Post `text` as one mrkdwn message, in the conversation's thread; the core splits
        long replies, so a text that still does not fit is cut with " …"."""
        return await self._post(conversation, fit_mrkdwn(text))

    async def send_card(
        self, conversation: ConversationRef, text: str, buttons: Sequence[Button]
    ) -> PostedMessage:
        """Post a card: `text` as Block Kit sections with `buttons` under them, and as the
        notification's plain fallback."""
        body = fit_mrkdwn(text)
        blocks = card_blocks(body, buttons) if self.shows_buttons else None
        return await self._post(conversation, body, blocks)

    async def _post(
        self, conversation: ConversationRef, body: str, blocks: list[dict[str, Any]] | None = None
    ) -> PostedMessage:
        response = await self._api(
            "chat.postMessage",
            self._web.chat_postMessage(
                channel=conversation.channel_id,
                text=body,
                blocks=blocks,
                thread_ts=conversation.thread_id,
            ),
            channel=conversation.channel_id,
        )
        if conversation.thread_id and not conversation.is_dm:
            self.remember_thread(conversation.channel_id, conversation.thread_id)
        return PostedMessage(conversation, str(response.get("ts") or ""))

    async def direct_conversation(self, user_id: str) -> ConversationRef:
        """The bot's DM with `user_id` (conversations.open, scope im:write), for reminders."""
        response = await self._api(
            "conversations.open", self._web.conversations_open(users=user_id, return_im=False)
        )
        channel = str((response.get("channel") or {}).get("id") or "")
        return ConversationRef(self.platform, channel, is_dm=True, team_id=self.team_id)

    async def memberships(self, user_id: str) -> Memberships:
        """The workspace and the channels `user_id` is in, for the web console."""
        teams = (self.team_id,) if self.team_id else ()
        return Memberships(teams, await member_channels(self._web, self._api, user_id))

    async def answer_privately(
        self, conversation: ConversationRef, user_id: str, text: str
    ) -> None:
        """Show `text` in the conversation to `user_id` alone (chat.postEphemeral)."""
        await self.post_ephemeral(conversation.channel_id, user_id, fit_mrkdwn(text))

    async def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        """Post mrkdwn `text` in `channel` for `user` alone (chat.postEphemeral)."""
        await self._api(
            "chat.postEphemeral",
            self._web.chat_postEphemeral(channel=channel, user=user, text=text),
            channel=channel,
        )

    async def edit(self, posted: PostedMessage, text: str) -> None:
        """Replace a message's text with `text` as mrkdwn (chat.update), cut with " …" when
        too long; a message still streaming (a crash left it so) is stopped first."""
        body = fit_mrkdwn(text)
        conflict = frozenset({"streaming_state_conflict"})
        response = await self._update(posted, body, harmless=conflict)
        if response.get("error") in conflict:
            await stop_stream(self._web, posted)
            await self._update(posted, body)

    async def _update(
        self, posted: PostedMessage, body: str, *, harmless: frozenset[str] = frozenset()
    ) -> AsyncSlackResponse:
        channel = posted.conversation.channel_id
        # No blocks: a streamed message's Markdown blocks give way to the mrkdwn text.
        call = self._web.chat_update(channel=channel, ts=posted.message_id, text=body, blocks=[])
        return await self._api("chat.update", call, channel=channel, harmless=harmless)

    def stream_reply(self, conversation: ConversationRef, recipient: UserRef) -> ReplyStream:
        """A reply to `recipient` that grows in the conversation's thread while it is written
        (Slack's chat streaming), or is posted whole where Slack will not stream it."""
        return SlackReplyStream(self, conversation, recipient)

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        """React with ✅ (`white_check_mark`) or ❌ (`x`); reacting twice is harmless."""
        channel = posted.conversation.channel_id
        name = _REACTION_NAMES.get(emoji, emoji.strip(":"))
        await self._api(
            "reactions.add",
            self._web.reactions_add(channel=channel, timestamp=posted.message_id, name=name),
            channel=channel,
            harmless=frozenset({"already_reacted"}),
        )

    def working(self, conversation: ConversationRef) -> AbstractAsyncContextManager[Status]:
        """Show "is thinking…" under the bot's name in the conversation's thread while the
        block runs (assistant.threads.setStatus), and give the block a function that shows
        another status there; Slack clears the status when the reply is posted."""
        return self._status.working(conversation.channel_id, conversation.thread_id)

    def remember_thread(self, channel: str, thread_ts: str) -> None:
        """Note a thread the bot replied in, so replies there reach it without a mention."""
        self.threads.add(channel, thread_ts)


async def _quiet_when_not_taken(error: Exception, logger: logging.Logger) -> None:
    """bolt's listener error handler: an event left to another connection is said in one
    line already (`hand_over`); anything else is logged as bolt would."""
    if not isinstance(error, NotTaken):
        logger.exception("Failed to run listener function (error: %s)", error)
