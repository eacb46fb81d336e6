"""What the dispatcher says to people when it cannot answer a message as asked: busy,
stopping, not allowed, storage down, a turn cut off, a card not posted."""

from __future__ import annotations

from adapters.base import DeliveryError, SlashCommand

BUSY_REPLY = "I'm busy with other requests right now; please ask again in a minute."
APOLOGY = "Sorry, something went wrong while handling that. It has been logged."
NOT_ALLOWED_REPLY = "I only take commands from the people and channels I am set up for here."
STOPPING_REPLY = "I am restarting right now; please ask again in a minute."
UNAVAILABLE_REPLY = (
    "Sorry, I could not take that: my storage is unavailable right now. "
    "Please try again in a few minutes."
)
STORAGE_FAILED_REPLY = (
    "Sorry, I could not finish that: my storage is unavailable right now. "
    "Please try again in a few minutes."
)
ABANDONED_REPLY = (
    "⚠️ lorebot was stopped while it was answering a message here. "
    "If you got no answer, please ask again."
)


def not_posted(command: SlashCommand, exc: DeliveryError) -> str:
    """Why a command's card is not there, told to the person who typed it."""
    if command.conversation.is_dm:  # a DM between other people, which lorebot is not in
        return (
            "⚠️ I cannot post in this conversation, so nothing was proposed: use /lorebot "
            "in a DM with me or in a channel I am in."
        )
    return f"⚠️ I could not post the card here, so nothing was proposed: {exc}"
