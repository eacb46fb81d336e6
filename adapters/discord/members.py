"""Where a person is on Discord, for the web console's sign-in: the servers (guilds) they
share with the bot, and in each the channels their roles let them view."""

from __future__ import annotations

import logging

import discord

from adapters.base import Memberships

_log = logging.getLogger(__name__)


async def memberships(client: discord.Client, user_id: str) -> Memberships:
    """The guilds of the bot that `user_id` is a member of, and the channels of each that
    they may view (by the permissions their roles give them now)."""
    if not user_id.isdigit():
        return Memberships()
    teams: list[str] = []
    channels: list[str] = []
    for guild in client.guilds:
        member = guild.get_member(int(user_id))
        if member is None:
            try:
                member = await guild.fetch_member(int(user_id))
            except discord.NotFound:
                continue  # not a member of this guild
            except discord.HTTPException as exc:
                _log.warning("could not ask guild %s about a member: %s", guild.id, exc)
                continue
        teams.append(str(guild.id))
        channels += [
            str(channel.id)
            for channel in guild.channels
            if not isinstance(channel, discord.CategoryChannel)
            and channel.permissions_for(member).view_channel
        ]
    return Memberships(tuple(teams), tuple(channels))
