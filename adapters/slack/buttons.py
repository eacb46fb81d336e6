"""Buttons under the bot's cards on Slack: Block Kit out, `block_actions` in.

A card is posted as mrkdwn sections with an `actions` block under them; its plain `text`
stays as the notification's fallback. A click reaches the listener bolt routes by
`action_id`; the click is handed to the core (which checks it and keeps it) before it is
acknowledged, so a click a stopping lorebot did not take goes to another connection. The
person is answered ephemerally, through the click's `response_url` or chat.postEphemeral.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from adapters.base import Button, ButtonClick, ConversationRef, NotTaken, UserRef
from adapters.slack.commands import CommandHost, answer_to

_log = logging.getLogger(__name__)

ACTION_PREFIX = "lorebot_card_"
_ACTION = re.compile(rf"^{ACTION_PREFIX}\d+$")
# Block Kit's limits: a section's text, a button's label and value.
SECTION_CHARS = 3000
LABEL_CHARS = 75
VALUE_CHARS = 2000
_STYLES = frozenset({"primary", "danger"})
STOPPING = "lorebot is restarting; click again in a moment."
_FENCE = "```"


def card_blocks(mrkdwn: str, buttons: Sequence[Button]) -> list[dict[str, Any]]:
    """The card's text as sections (split at line ends, each within Slack's limit), then
    one `actions` block holding the buttons."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": part}}
        for part in _parts(mrkdwn, SECTION_CHARS)
    ]
    elements = []
    for number, button in enumerate(buttons):
        element: dict[str, Any] = {
            "type": "button",
            "action_id": f"{ACTION_PREFIX}{number}",
            "text": {"type": "plain_text", "text": button.label[:LABEL_CHARS]},
            "value": button.value[:VALUE_CHARS],
        }
        if button.style in _STYLES:
            element["style"] = button.style
        elements.append(element)
    if elements:
        blocks.append({"type": "actions", "block_id": "lorebot_decision", "elements": elements})
    return blocks


def _parts(text: str, room: int) -> list[str]:
    """`text` in pieces of at most `room` characters, cut at line ends where one is near; a
    code block cut in two is closed at the end of one piece and opened again in the next."""
    parts = []
    fence = len(_FENCE) + 1
    while len(text) > room:
        cut = text.rfind("\n", 0, room - fence)
        cut = cut if cut > room // 2 else room - fence
        part, text = text[:cut], text[cut:].lstrip("\n")
        if part.count(_FENCE) % 2:  # inside a code block
            part, text = f"{part}\n{_FENCE}", f"{_FENCE}\n{text}"
        parts.append(part)
    if text.strip() or not parts:
        parts.append(text or " ")
    return parts


def register_buttons(app: AsyncApp, host: CommandHost) -> None:
    """Route clicks on the cards' buttons to a listener that hands each to the core (which
    stores it), then acknowledges it (bolt answers Slack once the listener returns). A
    click a stopping lorebot does not take is acknowledged too, and the clicker is asked
    to click again: Slack does not send an interaction again."""

    async def on_click(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        click = await to_click(host, body, respond)
        try:
            if click is not None:
                await host.hand_over(functools.partial(_given, click), f"click {click.event_id}")
        except NotTaken:
            _answering.add(asyncio.create_task(_answer_quietly(click, STOPPING)))
        await ack()

    app.action(_ACTION)(on_click)


# Answers to clicks under way (a reference, so none is collected unfinished).
_answering: set[asyncio.Task[None]] = set()


async def _given(click: ButtonClick) -> ButtonClick:
    return click


async def _answer_quietly(click: ButtonClick | None, text: str) -> None:
    if click is None:
        return
    try:
        await click.answer(text)
    except Exception as exc:  # the Web API's refusal is logged where it happened
        _log.warning("could not answer a click: %s", exc)
    finally:
        task = asyncio.current_task()
        if task is not None:
            _answering.discard(task)


async def to_click(
    host: CommandHost, body: Mapping[str, Any], respond: AsyncRespond
) -> ButtonClick | None:
    """The core's `ButtonClick` for a `block_actions` payload on one of the bot's messages,
    or None for one lorebot cannot read."""
    user = body.get("user") or {}
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
        "channel_id"
    )
    message = body.get("message") or {}
    message_ts = (body.get("container") or {}).get("message_ts") or message.get("ts")
    actions = body.get("actions") or []
    user_id = user.get("id")
    if not (user_id and channel and message_ts and actions):
        _log.warning("dropped a Slack click without a user, channel, message or action")
        return None
    action = actions[0]
    author, _ = await host.fetch_names("", str(user_id))
    trigger = str(body.get("trigger_id") or action.get("action_ts") or uuid.uuid4().hex)
    team_id = (body.get("team") or {}).get("id") or host.team_id
    thread_ts = message.get("thread_ts")
    return ButtonClick(
        conversation=ConversationRef(
            host.platform,
            str(channel),
            is_dm=str(channel).startswith("D"),
            thread_id=str(thread_ts) if thread_ts else None,
            team_id=team_id,
        ),
        user=UserRef(host.platform, str(user_id), author.name, is_bot=author.is_bot),
        value=str(action.get("value") or ""),
        message_id=str(message_ts),
        event_id=f"click:{trigger}",
        answer=answer_to(host, str(channel), str(user_id), respond),
    )
