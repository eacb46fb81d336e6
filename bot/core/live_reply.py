"""A reply shown while the model writes it: paced for the platform, split where the platform
splits, recorded so a crash never leaves it half-written without a notice.

The model's words reach the person through the adapter's `ReplyStream`, at most once per
`stream_interval_s`, one update at a time: a platform slow to show one finishes it in the
background instead of holding up reading the model's answer (and its timeout). The final
text (what the conversation history keeps) replaces whatever was shown. Only the first
message of a long reply grows live; the rest of it is posted when the reply is done.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from adapters.base import (
    SEARCHING,
    THINKING,
    Adapter,
    ConversationRef,
    DeliveryError,
    PostedMessage,
    ReplyStream,
    Status,
    StreamsReplies,
    UserRef,
    measure,
)
from bot.fencing import ClaimLost, still_held
from bot.split import split_message
from memory.policy.redaction import MIN_SECRET_CHARS, mask_known, redact
from memory.stores.live_replies import LiveReplies

_log = logging.getLogger(__name__)

# Tools whose calls show "is searching notes…".
SEARCH_TOOLS = frozenset({"memory_search", "memory_read"})
CUT_SHORT = "⚠️ (This reply was cut short before it was finished.)"
# How long reading the model's answer waits for the platform to show an update; a slower
# update goes on in the background, and no other starts until it is done.
UPDATE_WAIT_S = 0.25


class LiveReply:
    """One streamed reply: `write` the model's words as they come, `restart` when a round
    turned into tool calls, then `finish` with the final text (or `cut` it short)."""

    def __init__(
        self,
        adapter: Adapter,
        stream: ReplyStream,
        conversation: ConversationRef,
        *,
        interval_s: float,
        record: LiveReplies | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        secrets: Sequence[str] = (),
    ) -> None:
        self.secrets = tuple(secrets)  # configured secret values, never shown
        self.adapter = adapter
        self.stream = stream
        self.conversation = conversation
        self.interval_s = interval_s
        self.record = record
        self.monotonic = monotonic
        self._measure = measure(adapter)
        self._text = ""  # the model's words of this round
        self._shown = ""
        self._live = True  # false once the platform refused an update
        self._done = False
        self._updating: asyncio.Task[None] | None = None
        # The first update waits one interval too: a reply written within it is posted once.
        self._last = monotonic()

    @property
    def shown(self) -> str:
        """What the person sees now."""
        return self._shown

    async def write(self, delta: str) -> None:
        """The model wrote `delta`; start showing the text so far when an interval has
        passed and the platform is done with the previous update."""
        self._text += delta
        if not self._live or self.monotonic() - self._last < self.interval_s:
            return
        if self._updating is None or self._updating.done():
            self._last = self.monotonic()
            self._updating = asyncio.create_task(self._update(), name="live-reply-update")
            await asyncio.wait({self._updating}, timeout=UPDATE_WAIT_S)

    async def _updated(self) -> None:
        """Wait for the update in flight (an error in it raises here)."""
        if self._updating is not None:
            updating, self._updating = self._updating, None
            await updating

    def restart(self) -> None:
        """The round's words led to tool calls: the next round's words replace them."""
        self._text = ""

    async def _update(self) -> None:
        visible = self._first_part(hide_secrets(self._text, self.secrets))
        if not visible or visible == self._shown:
            return
        try:
            await still_held()
            await self.stream.show(visible)
        except ClaimLost as exc:  # `finish` says so to the turn
            _log.warning("stopped showing a reply in %s: %s", self.conversation.key, exc)
            self._live = False
            return
        except DeliveryError:
            self._live = False  # the adapter logged why; `finish` still posts the reply
            return
        except Exception:
            _log.exception("could not update a streamed reply in %s", self.conversation.key)
            self._live = False
            return
        self._shown = visible
        await self._remember()

    def _first_part(self, text: str) -> str:
        limit = self.adapter.max_message_chars
        if self._measure(text) <= limit:
            return text.strip()
        return split_message(text, limit, self._measure)[0]

    async def _remember(self) -> None:
        posted = self.stream.posted
        if self.record is None or posted is None:
            return
        conversation = dataclasses.asdict(self.conversation)
        # Kept redacted, as the history keeps the reply: a credential the model repeated
        # from the person's message is no more written to the database than theirs was.
        shown = redact(self._shown, self.secrets)
        await self.record.record(self.conversation.platform, conversation, posted.message_id, shown)

    async def finish(self, text: str) -> PostedMessage:
        """Make the reply say exactly `text`: its first part in the streamed message, the
        rest in messages after it."""
        await self._updated()  # its text is part of what the platform shows now
        await still_held()
        parts = split_message(text, self.adapter.max_message_chars, self._measure)
        self._done = True
        posted = await self.stream.finish(parts[0])
        await self._forget()
        for part in parts[1:]:
            posted = await self.adapter.send(self.conversation, part)
        return posted

    async def cut(self) -> None:
        """End a reply the turn did not finish (shutdown, a failure): what was shown stays,
        with a notice that it was cut short. Never raises."""
        if self._updating is not None:  # the platform may be what is stuck
            self._updating.cancel()
            await asyncio.wait({self._updating})
            self._updating = None
        if self._done or not self._shown:
            return
        try:
            await self.finish(f"{self._shown}\n\n{CUT_SHORT}")
        except ClaimLost:
            pass  # the conversation's new holder marks it
        except Exception as exc:  # the record stays; the next start mends the message
            _log.warning("could not mark a cut-short reply in %s: %r", self.conversation.key, exc)

    async def _forget(self) -> None:
        posted = self.stream.posted
        if self.record is not None and posted is not None:
            await self.record.done(self.conversation.platform, posted.message_id)


def hide_secrets(text: str, known: Sequence[str]) -> str:
    """Text being written with every known secret masked, and a last word that could be the
    start of one held back until the model has written more."""
    text = mask_known(text, known)
    for secret in known:
        if len(secret) < MIN_SECRET_CHARS:
            continue
        for size in range(min(len(secret), len(text)), 0, -1):
            if text.endswith(secret[:size]):
                text = text[:-size]
                break
    return text


def live_reply(
    adapter: Adapter,
    conversation: ConversationRef,
    recipient: UserRef,
    record: LiveReplies | None,
    secrets: Sequence[str] = (),
) -> LiveReply | None:
    """A streamed reply where the adapter can show one, else None (the reply is posted
    whole when done)."""
    if not isinstance(adapter, StreamsReplies):
        return None
    stream = adapter.stream_reply(conversation, recipient)
    return LiveReply(
        adapter,
        stream,
        conversation,
        interval_s=adapter.stream_interval_s,
        record=record,
        secrets=secrets,
    )


async def mend_cut_replies(
    adapter: Adapter, record: LiveReplies, only: Callable[[str], bool] = lambda key: True
) -> int:
    """Finish the replies of `adapter` that a crash left half-written, with the notice, in
    the conversations whose key `only` accepts; how many were mended. A message the
    platform refuses to edit is given up on."""
    mended = 0
    for row in await record.fetch_unfinished(adapter.platform):
        conversation = ConversationRef(**row.conversation)
        if not only(conversation.key):
            continue
        posted = PostedMessage(conversation, row.message_id)
        try:
            await adapter.edit(posted, f"{row.shown}\n\n{CUT_SHORT}")
            mended += 1
        except Exception as exc:
            _log.warning("could not mark the cut-short reply %s: %r", row.message_id, exc)
        await record.done(row.platform, row.message_id)
    if mended:
        _log.info("marked %d %s replies cut short by the last stop", mended, adapter.platform)
    return mended


async def _quiet(text: str) -> None:
    return None


@dataclass(slots=True)
class Progress:
    """How a turn shows its work while it runs: the reply as the model writes it (None
    where the platform cannot stream) and the status line."""

    reply: LiveReply | None = None
    status: Status = _quiet

    @property
    def on_content(self) -> Callable[[str], Awaitable[None]] | None:
        """What the model's words are streamed to, if anything."""
        return None if self.reply is None else self.reply.write

    async def retry(self) -> None:
        """The model is asked again: what it wrote gives way to its next answer."""
        if self.reply is not None:
            self.reply.restart()
        await self.status(THINKING)

    async def tools_called(self, names: Sequence[str]) -> None:
        """A round ended in tool calls: its words give way to the next round's, and the
        status says when the calls search the notes."""
        if self.reply is not None:
            self.reply.restart()
        await self.status(SEARCHING if SEARCH_TOOLS.intersection(names) else THINKING)
