"""Discord replies that grow by edits while the model writes them: Discord has no streaming
call, so the first text is posted and later texts replace it."""

from __future__ import annotations

from typing import Final, Protocol

from adapters.base import ConversationRef, DeliveryError, PostedMessage
from adapters.discord.text import clip

STREAM_INTERVAL_S: Final = 1.0
"""How often a streamed reply is edited: Discord allows about five edits per five seconds
in a channel."""


class StreamHost(Protocol):
    """What a stream needs of the Discord adapter."""

    max_message_chars: int

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        """Post `text` as one message (a Discord reply to the question in a guild channel)."""

    async def edit(self, posted: PostedMessage, text: str) -> None:
        """Replace the text of a message the bot posted."""


class DiscordReplyStream:
    """One reply that grows by edits: the first `show` posts it, later ones edit it, and an
    unchanged text is never sent again. A refusal ends the live updates; `finish` still sets
    the final text (or posts it, when nothing was posted)."""

    def __init__(self, host: StreamHost, conversation: ConversationRef) -> None:
        self._host = host
        self._conversation = conversation
        self._posted: PostedMessage | None = None
        self._shown = ""  # what Discord shows, as clipped for it
        self._live = True

    @property
    def posted(self) -> PostedMessage | None:
        """The reply once it is posted."""
        return self._posted

    async def show(self, text: str) -> None:
        """Post or edit the reply to show `text`, unless Discord refused an earlier update."""
        if not self._live:
            return
        try:
            await self._put(text)
        except DeliveryError:
            self._live = False  # logged; `finish` tries once more with the final text

    async def finish(self, text: str) -> PostedMessage:
        """Make the reply say exactly `text`: one post when nothing was shown, else one edit
        if it differs from what is shown."""
        self._live = False
        return await self._put(text)

    async def _put(self, text: str) -> PostedMessage:
        content = clip(text, self._host.max_message_chars)
        if self._posted is None:
            self._posted = await self._host.send(self._conversation, content)
        elif content != self._shown:
            await self._host.edit(self._posted, content)
        self._shown = content
        return self._posted
