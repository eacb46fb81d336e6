"""discord.py's gateway objects turned into lorebot's platform-neutral events, in one place
(as discord.py's own `parse_*` methods turn payloads into models)."""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Final

import discord

from adapters.base import ConversationRef, Message, ReactionEvent, UserRef
from adapters.discord.text import plain_text

PLATFORM: Final = "discord"

_ANSWERED_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})


def message_event(
    message: discord.Message, bot: discord.ClientUser, threads: Container[int]
) -> Message | None:
    """The platform-neutral `Message` for a gateway message, or None for the bot's own
    messages and system messages (joins, pins, thread starts). `threads` are the threads the
    bot posted in, which it answers without a mention."""
    if message.author.id == bot.id or message.type not in _ANSWERED_TYPES:
        return None
    channel = message.channel
    guild_id = _guild_id(message)
    bot_roles = {r.id for r in message.role_mentions if r.tags and r.tags.bot_id == bot.id}
    mentioned = bot_roles or any(user.id == bot.id for user in message.mentions)
    in_thread = isinstance(channel, discord.Thread)
    joined = isinstance(channel, discord.Thread) and (
        channel.me is not None or channel.owner_id == bot.id or channel.id in threads
    )
    # In a guild channel the reply refers to the message; in a thread or DM it is
    # simply posted there.
    reply_to = None if guild_id is None or in_thread else str(message.id)
    conversation = ConversationRef(
        PLATFORM,
        str(channel.id),
        is_dm=guild_id is None,
        team_id=None if guild_id is None else str(guild_id),
        reply_to=reply_to,
    )
    text = plain_text(
        message.content,
        remove_users={bot.id},
        remove_roles=bot_roles,
        users={user.id: user.display_name for user in message.mentions},
        roles={role.id: role.name for role in message.role_mentions},
        channels={c.id: c.name for c in message.channel_mentions},
    )
    author = message.author
    return Message(
        conversation=conversation,
        author=UserRef(PLATFORM, str(author.id), author.display_name, is_bot=author.bot),
        text=text,
        message_id=str(message.id),
        event_id=str(message.id),  # a gateway replay after a resume is dropped
        mentions_bot=bool(guild_id is None or mentioned or joined),
        link=message.jump_url,
    )


def reaction_event(
    payload: discord.RawReactionActionEvent,
    bot: discord.ClientUser,
    get_user: Callable[[int], discord.User | None],
) -> ReactionEvent | None:
    """The `ReactionEvent` for a raw reaction on one of the bot's messages, or None for the
    bot's own reactions and reactions on other people's messages. `get_user` names the person
    from discord.py's cache when the payload has no member (in a DM)."""
    if payload.user_id == bot.id:
        return None
    if payload.message_author_id is not None and payload.message_author_id != bot.id:
        return None
    # APPROVE and REJECT arrive as their unicode names (sometimes with a variation selector);
    # anything else is passed on as is and ignored by the approvals.
    emoji = (payload.emoji.name or str(payload.emoji)).replace("\ufe0f", "")
    guild_id = payload.guild_id
    conversation = ConversationRef(
        PLATFORM,
        str(payload.channel_id),
        is_dm=guild_id is None,
        team_id=None if guild_id is None else str(guild_id),
    )
    known = payload.member or get_user(payload.user_id)
    user = UserRef(
        PLATFORM,
        str(payload.user_id),
        known.display_name if known else "",
        is_bot=bool(known and known.bot),
    )
    return ReactionEvent(
        conversation=conversation,
        user=user,
        emoji=emoji,
        target_message_id=str(payload.message_id),
        # Discord gives reactions no id; a removal carries the id of the add it undoes,
        # so the dispatcher takes the same reaction added again as a new decision.
        event_id=f"{payload.message_id}:{payload.user_id}:{emoji}",
        added=payload.event_type == "REACTION_ADD",
    )


def _guild_id(message: discord.Message) -> int | None:
    if message.guild is not None:
        return message.guild.id
    channel = message.channel
    if isinstance(channel, discord.PartialMessageable):
        return channel.guild_id
    return None
