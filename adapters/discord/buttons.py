"""Buttons under the bot's cards on Discord: message components out, clicks in.

The buttons are `discord.ui.DynamicItem`s: the client knows their custom_id's shape from
start, so a card posted before a restart still takes clicks (no view is kept per message,
none times out). A click is acknowledged at once (a deferred update: the card stays as it
is) and handed to the core as a `ButtonClick`; its answer is an ephemeral follow-up that
only the clicker sees.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

import discord

from adapters.base import Answer, Button, ButtonClick, ConversationRef, DeliveryError, UserRef
from adapters.discord.errors import rest
from adapters.discord.text import clip

_log = logging.getLogger(__name__)

# The custom_id of every card button: lorebot's own prefix, then what the core reads (a
# custom_id holds 100 characters at most).
TEMPLATE: Final = re.compile(r"lorebot:[!-~]{1,92}")
STOPPING: Final = "lorebot is restarting; click again in a moment."
_STYLES: Final = {"primary": discord.ButtonStyle.success, "danger": discord.ButtonStyle.danger}


class ClickHost(Protocol):
    """What a click needs of the Discord adapter."""

    platform: str
    max_message_chars: int

    async def deliver(self, event: ButtonClick) -> bool:
        """Hand `event` to the core; False when lorebot is stopping and did not take it."""


@runtime_checkable
class ClickHostOwner(Protocol):
    """A discord.py client that knows the adapter its clicks go to."""

    click_host: ClickHost


class CardButton(discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=TEMPLATE):
    """A card's button; registered with `Client.add_dynamic_items`, it takes any click whose
    custom_id has the template's shape, on cards posted before a restart too."""

    def __init__(self, value: str, label: str = "", style: str = "") -> None:
        button: discord.ui.Button[discord.ui.View] = discord.ui.Button(
            label=label or None,
            style=_STYLES.get(style, discord.ButtonStyle.secondary),
            custom_id=value,
        )
        super().__init__(button)

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[discord.Client],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> CardButton:
        return cls(match.group(0))

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        client = interaction.client
        if isinstance(client, ClickHostOwner):
            await take_click(client.click_host, interaction, self.custom_id)


def card_view(buttons: Sequence[Button]) -> Any:
    """`buttons` as `send` takes them: a view that never times out and that no message keeps
    (every item is dynamic), or discord.py's MISSING for no buttons."""
    if not buttons:
        return discord.utils.MISSING
    view = discord.ui.View(timeout=None)
    for button in buttons:
        view.add_item(CardButton(button.value, button.label[:80], button.style))
    return view


async def take_click(
    host: ClickHost, interaction: discord.Interaction[discord.Client], value: str
) -> None:
    """Acknowledge a click at once (Discord allows 3 s), then hand it to the core."""
    channel_id = interaction.channel_id or 0
    try:
        await rest("acknowledge a click", channel_id, interaction.response.defer())
    except DeliveryError:
        return  # logged; an interaction that was not acknowledged takes no answer
    event = click_event(host, interaction, value)
    if event is None:
        _log.warning("dropped a Discord click from a channel or message discord.py lacks")
        return
    if not await host.deliver(event):
        with contextlib.suppress(DeliveryError):  # logged
            await event.answer(STOPPING)


def click_event(
    host: ClickHost, interaction: discord.Interaction[discord.Client], value: str
) -> ButtonClick | None:
    """The core's `ButtonClick` for an acknowledged click on a button carrying `value`."""
    channel_id, message = interaction.channel_id, interaction.message
    if channel_id is None or message is None:
        return None
    guild_id, user = interaction.guild_id, interaction.user
    return ButtonClick(
        conversation=ConversationRef(
            host.platform,
            str(channel_id),
            is_dm=guild_id is None,
            team_id=None if guild_id is None else str(guild_id),
        ),
        user=UserRef(host.platform, str(user.id), user.display_name, is_bot=user.bot),
        value=value,
        message_id=str(message.id),
        event_id=f"interaction:{interaction.id}",
        answer=_answer_to(host, interaction, channel_id),
    )


def _answer_to(
    host: ClickHost, interaction: discord.Interaction[discord.Client], channel_id: int
) -> Answer:
    async def answer(text: str) -> None:
        call = interaction.followup.send(clip(text, host.max_message_chars), ephemeral=True)
        await rest("answer a click", channel_id, call)

    return answer
