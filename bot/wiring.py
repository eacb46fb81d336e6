"""Building the chat adapters the configuration asks for; the only place that names them."""

from __future__ import annotations

from adapters.base import Adapter
from bot.config import Settings


def build_adapters(settings: Settings) -> list[Adapter]:
    """One adapter per platform whose credentials are configured."""
    adapters: list[Adapter] = []
    if settings.slack.configured:
        from adapters.slack import SlackAdapter

        slack = settings.slack
        assert slack.bot_token is not None
        adapters.append(
            SlackAdapter(
                bot_token=slack.bot_token.get_secret_value(),
                app_token=slack.app_token.get_secret_value() if slack.app_token else None,
                signing_secret=(
                    slack.signing_secret.get_secret_value() if slack.signing_secret else None
                ),
                listen=slack.listen,
                events_path=slack.events_path,
                api_base_url=slack.api_base_url,
            )
        )
    if settings.discord.configured:
        from adapters.discord import DiscordAdapter

        discord = settings.discord
        assert discord.token is not None
        adapters.append(
            DiscordAdapter(
                token=discord.token.get_secret_value(),
                api_base_url=discord.api_base_url,
                gateway_url=discord.gateway_url,
            )
        )
    return adapters
