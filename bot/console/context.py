"""What the console's pages reach through their request: the daemon's services, the
templates and the cookies, each under its key of the aiohttp app."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from aiohttp import web

from adapters.base import Adapter, KnowsMemberships, Memberships
from bot.approvals.service import ApprovalService
from bot.config.settings import Settings
from bot.console.browser import Attempts, Cookies
from bot.console.rendering import Pages
from bot.core.dispatcher import Dispatcher
from bot.jobs.runner import JobRunner
from bot.model.client import Model
from memory.clock import Clock, utc_now
from memory.scope_ids import raw_id, scope_id
from memory.stores.stores import Stores
from memory.types import Scope
from skills.catalog import Catalog

_log = logging.getLogger(__name__)


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
    elsewhere: Collection[str] = ()  # platforms another replica connects now
    leading: Callable[[], bool] = lambda: True  # whether this replica leads (runs jobs)
    attempts: Attempts = field(default_factory=Attempts)

    @property
    def admins(self) -> frozenset[str]:
        return frozenset(self.settings.bot.admins)

    async def memberships(self, user_id: str) -> Memberships | None:
        """Where the person of `user_id` (a user scope) is, as their platform says now;
        None when it cannot be asked now."""
        scope = Scope.parse(user_id)
        adapter = self.adapters.get(scope.platform)
        if not isinstance(adapter, KnowsMemberships):
            return Memberships()
        try:
            return await adapter.memberships(raw_id(scope.id))
        except Exception:
            _log.exception("could not ask %s where %s is", scope.platform, user_id)
            return None

    def heard(self, user_id: str) -> bool:
        """Whether chat would hear this person (`bot.allowed_users`; admins always)."""
        allowed = self.settings.bot.allowed_users
        return not allowed or user_id in allowed or user_id in self.admins

    def member_scopes(self, user_id: str, found: Memberships) -> tuple[str, ...]:
        """The team and channel scopes of what a platform said of a person, less the
        channels chat does not answer in (`bot.allowed_channels`)."""
        platform = Scope.parse(user_id).platform
        teams = [f"team:{platform}/{scope_id(team)}" for team in found.teams]
        channels = [f"channel:{platform}/{scope_id(c)}" for c in found.channels]
        allowed = self.settings.bot.allowed_channels
        return (*teams, *(c for c in channels if not allowed or c in allowed))


CONSOLE = web.AppKey("console", Console)
PAGES = web.AppKey("pages", Pages)
COOKIES = web.AppKey("cookies", Cookies)
