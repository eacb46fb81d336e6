"""The `/lorebot` application commands on Discord: the command group, its registration with
Discord, and each invocation acknowledged at once and turned into a `SlashCommand` whose
answer only its person sees."""

from __future__ import annotations

import logging
from typing import Final, Protocol

import aiohttp
import discord
from discord import app_commands

from adapters.base import Answer, ConversationRef, DeliveryError, SlashCommand, UserRef
from adapters.discord.errors import rest
from adapters.discord.text import clip, command_text

_log = logging.getLogger(__name__)

COMMAND_GROUP: Final = "lorebot"
UNKNOWN_CHANNEL = "lorebot cannot take commands in this kind of channel."
# View Channels, Send Messages, Send Messages in Threads, Add Reactions, Read Message History.
PERMISSIONS: Final = 274877975616
INVITE_URL: Final = (
    "https://discord.com/oauth2/authorize?client_id={application_id}"
    f"&scope=bot+applications.commands&permissions={PERMISSIONS}"
)


class CommandHost(Protocol):
    """What the commands need of the Discord adapter."""

    platform: str
    max_message_chars: int
    command_guild_id: int | None

    async def deliver(self, event: SlashCommand) -> bool:
        """Hand `event` to the core; False when it did not take it (lorebot is stopping)."""


def command_tree(
    client: discord.Client, host: CommandHost
) -> app_commands.CommandTree[discord.Client]:
    """The `/lorebot` group on `client`: global, and copied to the host's `command_guild_id`
    when set, since Discord shows a server's commands at once."""
    tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(client)
    tree.add_command(_LorebotCommands(host))
    if host.command_guild_id is not None:
        tree.copy_global_to(guild=discord.Object(host.command_guild_id))
    return tree


async def sync_commands(
    tree: app_commands.CommandTree[discord.Client], guild_id: int | None
) -> None:
    """Register `/lorebot` with Discord, globally or in server `guild_id`. A refusal is logged
    with its fix; mentions and DMs work without the commands."""
    where = "globally" if guild_id is None else f"in server {guild_id}"
    try:
        await tree.sync(guild=None if guild_id is None else discord.Object(guild_id))
    except discord.HTTPException as exc:
        _log.warning(
            "Discord refused to register the /lorebot commands %s (HTTP %s, code %s): %s; "
            "mentions and DMs still work",
            where,
            exc.status,
            exc.code,
            _sync_fix(exc, tree.client.application_id, guild_id),
        )
    except (discord.DiscordException, aiohttp.ClientError, OSError) as exc:
        _log.warning(
            "could not register the /lorebot commands %s: %s: %s", where, type(exc).__name__, exc
        )
    except Exception:
        _log.exception("could not register the /lorebot commands %s", where)
    else:
        _log.info("registered the /lorebot commands %s", where)
        if guild_id is not None:
            await _drop_global_lorebot(tree, guild_id)


async def _drop_global_lorebot(
    tree: app_commands.CommandTree[discord.Client], guild_id: int
) -> None:
    """Delete the global `/lorebot` an earlier start registered before a command server
    was set: left in place, that server would show `/lorebot` twice. Other global
    commands of the application are left alone."""
    try:
        stale = [c for c in await tree.fetch_commands() if c.name == "lorebot"]
        for command in stale:
            await command.delete()
    except (discord.DiscordException, aiohttp.ClientError, OSError) as exc:
        _log.warning(
            "could not remove the global /lorebot an earlier start registered (servers may "
            "show /lorebot twice): %s: %s",
            type(exc).__name__,
            exc,
        )
        return
    except Exception:
        _log.exception("could not remove the global /lorebot an earlier start registered")
        return
    if stale:
        _log.info("removed the global /lorebot commands: server %s has its own now", guild_id)


def _sync_fix(exc: discord.HTTPException, application_id: int | None, guild_id: int | None) -> str:
    """What the operator can do about a refused command sync, in one sentence."""
    if exc.status != 403:
        return exc.text or "Discord gave no reason"
    invite = INVITE_URL.format(application_id=application_id or "APPLICATION_ID")
    fix = f"re-invite lorebot with the applications.commands scope: {invite}"
    if guild_id is not None:
        fix += (
            f", and check that LOREBOT_DISCORD__COMMAND_GUILD_ID ({guild_id}) "
            "is a server lorebot is in"
        )
    return fix


async def handle_command(
    host: CommandHost, interaction: discord.Interaction[discord.Client], text: str
) -> None:
    """Acknowledge a `/lorebot` command at once (Discord allows 3 s; only the person sees
    "lorebot is thinking…"), then hand it to the core."""
    channel_id = interaction.channel_id
    defer = interaction.response.defer(thinking=True, ephemeral=True)
    try:
        await rest("acknowledge a /lorebot command", channel_id or 0, defer)
    except DeliveryError:
        return  # logged; an interaction that was not acknowledged takes no answer
    event = command_event(host, interaction, text)
    if event is None:
        _log.warning("a /lorebot command came from a channel discord.py does not know")
        await rest(
            "answer a /lorebot command",
            0,
            interaction.followup.send(UNKNOWN_CHANNEL, ephemeral=True),
        )
    else:
        await host.deliver(event)


def command_event(
    host: CommandHost, interaction: discord.Interaction[discord.Client], text: str
) -> SlashCommand | None:
    """The `SlashCommand` for an acknowledged `/lorebot` invocation whose command text is
    `text`, or None when its channel is of a kind discord.py cannot read."""
    channel_id = interaction.channel_id
    if channel_id is None:
        return None
    guild_id = interaction.guild_id
    user = interaction.user
    conversation = ConversationRef(
        host.platform,
        str(channel_id),
        is_dm=guild_id is None,
        team_id=None if guild_id is None else str(guild_id),
    )
    return SlashCommand(
        conversation=conversation,
        author=UserRef(host.platform, str(user.id), user.display_name, is_bot=user.bot),
        text=text,
        message_id="",
        event_id=f"interaction:{interaction.id}",
        mentions_bot=True,
        answer=_answer_to(host, interaction, channel_id),
    )


def _answer_to(
    host: CommandHost, interaction: discord.Interaction[discord.Client], channel_id: int
) -> Answer:
    """An ephemeral follow-up to `interaction`, which only its person sees (for 15 minutes
    after the command)."""
    limit = host.max_message_chars

    async def answer(text: str) -> None:
        call = interaction.followup.send(clip(text, limit), ephemeral=True)
        await rest("answer a /lorebot command", channel_id, call)

    return answer


class _LorebotCommands(
    app_commands.Group,
    name=COMMAND_GROUP,
    description="lorebot's notes and cards: remember, forget, recall, undo, approve, decline",
):
    """`/lorebot remember|forget|recall|undo|approve|decline|help`, each handed on as the text
    the core reads for it. Who may do what is checked by the core: discord.py drops
    `default_permissions` on subcommands."""

    def __init__(self, host: CommandHost) -> None:
        super().__init__()
        self._host = host

    @app_commands.command(description="Propose a note; it is saved when you approve its card")
    @app_commands.describe(text="What to remember, e.g. deploys happen on Tuesdays")
    async def remember(self, interaction: discord.Interaction[discord.Client], text: str) -> None:
        await handle_command(self._host, interaction, command_text("remember", text))

    @app_commands.command(description="Propose forgetting the note that matches")
    @app_commands.describe(what="The topic or words of the note to forget")
    async def forget(self, interaction: discord.Interaction[discord.Client], what: str) -> None:
        await handle_command(self._host, interaction, command_text("forget", what))

    @app_commands.command(description="What lorebot remembers here, shown to you alone")
    @app_commands.describe(about="Search the notes for this; leave it out to list them")
    async def recall(
        self, interaction: discord.Interaction[discord.Client], about: str | None = None
    ) -> None:
        await handle_command(self._host, interaction, command_text("recall", about))

    @app_commands.command(description="Revert your latest change to lorebot's notes")
    async def undo(self, interaction: discord.Interaction[discord.Client]) -> None:
        await handle_command(self._host, interaction, command_text("undo"))

    @app_commands.command(description="Approve a card, as its Approve button does")
    @app_commands.describe(card="The card's number: #12 on its first line is 12")
    async def approve(
        self, interaction: discord.Interaction[discord.Client], card: app_commands.Range[int, 1]
    ) -> None:
        await handle_command(self._host, interaction, command_text("approve", str(card)))

    @app_commands.command(description="Decline a card, as its Decline button does")
    @app_commands.describe(card="The card's number: #12 on its first line is 12")
    async def decline(
        self, interaction: discord.Interaction[discord.Client], card: app_commands.Range[int, 1]
    ) -> None:
        await handle_command(self._host, interaction, command_text("decline", str(card)))

    @app_commands.command(description="What lorebot understands")
    async def help(self, interaction: discord.Interaction[discord.Client]) -> None:
        await handle_command(self._host, interaction, command_text("help"))
