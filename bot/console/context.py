"""What the console's pages reach through their request: the daemon's services, the
templates and the cookies, each under its key of the aiohttp app."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web

from adapters.base import Adapter
from bot.approvals.service import ApprovalService
from bot.config.settings import Settings
from bot.console.browser import Attempts, Cookies
from bot.console.rendering import Pages
from bot.core.dispatcher import Dispatcher
from bot.jobs.runner import JobRunner
from bot.model.client import Model
from memory.clock import Clock, utc_now
from memory.stores.stores import Stores
from skills.catalog import Catalog

# The channel and team scopes a person is in, as their platform says at sign-in.
Memberships = Callable[[str], Awaitable[tuple[str, ...]]]


async def no_memberships(user_id: str) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Console:
    """What the console's pages read and change: the daemon's own services."""

    settings: Settings
    stores: Stores
    approvals: ApprovalService
    dispatcher: Dispatcher
    model: Model
    adapters: Mapping[str, Adapter]
    jobs: JobRunner
    catalog: Catalog
    clock: Clock = utc_now
    memberships: Memberships = no_memberships
    attempts: Attempts = field(default_factory=Attempts)

    @property
    def admins(self) -> frozenset[str]:
        return frozenset(self.settings.bot.admins)


CONSOLE = web.AppKey("console", Console)


PAGES = web.AppKey("pages", Pages)
COOKIES = web.AppKey("cookies", Cookies)
