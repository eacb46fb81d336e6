"""Building the chat adapters the configuration asks for, from the platform table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.daemon.platforms import PLATFORMS, Platform, configured

if TYPE_CHECKING:
    from adapters.base import Adapter
    from bot.config.settings import Settings


def build_adapters(
    settings: Settings, platforms: Sequence[Platform[Any]] = PLATFORMS
) -> list[Adapter]:
    """One adapter per platform whose credentials are configured, in table order."""
    return [platform.adapter(settings) for platform in configured(settings, platforms)]
