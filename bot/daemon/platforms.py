"""The chat platforms lorebot can join: one entry each, which wiring, `doctor` and `run`
iterate. Adding a platform is its adapter module, its settings section and one entry in
`PLATFORMS`.

Each entry imports its adapter module only when it builds or checks one, so commands that
never connect (`notes`, `config`, `--help`) start without slack_bolt or discord.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from pydantic import SecretStr

    from adapters.base import Adapter
    from adapters.diagnosis import Finding
    from bot.config.sections import DiscordSettings, SlackSettings
    from bot.config.settings import Settings


class Section(Protocol):
    """A platform's settings: enough of them set means the platform is on."""

    @property
    def configured(self) -> bool:
        """Whether the credentials the platform needs are all set."""


S = TypeVar("S", bound=Section)


@dataclass(frozen=True, slots=True)
class Platform(Generic[S]):
    """One chat platform: where its settings are, how its adapter is built and checked,
    and what an operator sets to turn it on."""

    name: str  # the adapter's `platform`, as scopes write it: `slack`
    title: str  # for people: `Slack`
    section: Callable[[Settings], S]
    build: Callable[[S], Adapter]
    diagnose: Callable[[S], Awaitable[list[Finding]]]
    setup: str  # the settings that turn it on, e.g. `LOREBOT_DISCORD__TOKEN`
    # Whether only the leading replica may connect: every connection of a Discord bot
    # hears every event (two would answer twice), while Slack gives each event to one.
    leader_only: bool = False

    def configured(self, settings: Settings) -> bool:
        """Whether `settings` turn this platform on."""
        return self.section(settings).configured

    def adapter(self, settings: Settings) -> Adapter:
        """A new, not yet started adapter for this platform."""
        return self.build(self.section(settings))

    async def check(self, settings: Settings) -> list[Finding]:
        """`lorebot doctor`'s findings: the credentials tried against the platform."""
        return await self.diagnose(self.section(settings))


# --- Slack ---------------------------------------------------------------------------


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()


def _slack_adapter(slack: SlackSettings) -> Adapter:
    from adapters.slack.adapter import SlackAdapter

    assert slack.bot_token is not None  # `configured` says so
    return SlackAdapter(
        bot_token=slack.bot_token.get_secret_value(),
        app_token=_secret(slack.app_token),
        signing_secret=_secret(slack.signing_secret),
        listen=slack.listen,
        events_path=slack.events_path,
        api_base_url=slack.api_base_url,
        buttons=slack.buttons,
    )


async def _slack_check(slack: SlackSettings) -> list[Finding]:
    from adapters.slack.check import diagnose_slack

    assert slack.bot_token is not None
    return await diagnose_slack(
        slack.bot_token.get_secret_value(),
        _secret(slack.app_token),
        slack.api_base_url,
        buttons=slack.buttons,
    )


SLACK: Platform[SlackSettings] = Platform(
    name="slack",
    title="Slack",
    section=lambda settings: settings.slack,
    build=_slack_adapter,
    diagnose=_slack_check,
    setup="LOREBOT_SLACK__BOT_TOKEN and LOREBOT_SLACK__APP_TOKEN",
)


# --- Discord -------------------------------------------------------------------------


def _discord_adapter(discord: DiscordSettings) -> Adapter:
    from adapters.discord.adapter import DiscordAdapter

    assert discord.token is not None
    return DiscordAdapter(
        token=discord.token.get_secret_value(),
        api_base_url=discord.api_base_url,
        gateway_url=discord.gateway_url,
        command_guild_id=discord.command_guild_id,
    )


async def _discord_check(discord: DiscordSettings) -> list[Finding]:
    from adapters.discord.check import diagnose_discord

    assert discord.token is not None
    return await diagnose_discord(discord.token.get_secret_value(), discord.api_base_url)


DISCORD: Platform[DiscordSettings] = Platform(
    name="discord",
    title="Discord",
    section=lambda settings: settings.discord,
    build=_discord_adapter,
    diagnose=_discord_check,
    setup="LOREBOT_DISCORD__TOKEN",
    leader_only=True,
)


PLATFORMS: tuple[Platform[Any], ...] = (SLACK, DISCORD)


def configured(
    settings: Settings, platforms: Sequence[Platform[Any]] = PLATFORMS
) -> list[Platform[Any]]:
    """The platforms `settings` turn on, in table order."""
    return [platform for platform in platforms if platform.configured(settings)]


def leader_only(platform: str, platforms: Sequence[Platform[Any]] = PLATFORMS) -> bool:
    """Whether only the leading replica connects to the platform named `platform`."""
    return any(p.name == platform and p.leader_only for p in platforms)
