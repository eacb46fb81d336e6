"""Who is who in Slack: display names from users.info, kept in a bounded cache so that a
message full of mentions costs a bounded number of calls."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from adapters.slack.errors import SlackRequestError
from adapters.slack.text import mentioned_user_ids

USER_CACHE_TTL_S = 3600.0
USER_CACHE_SIZE = 5000
MAX_LOOKUPS_PER_MESSAGE = 20
"""Mentioned people whose names one message may look up (users.info); the rest keep
their id unless their name is cached."""

UserLookup = Callable[[str], Awaitable[Mapping[str, Any]]]
"""One users.info call: the `user` object, or {} when Slack does not know the person."""


@dataclass(frozen=True, slots=True)
class SlackUser:
    """What lorebot keeps about a person: the name to show and whether it is a bot."""

    id: str
    name: str
    is_bot: bool = False


class SlackUsers:
    """The people the adapter has met, each kept for an hour, the least recently used
    forgotten first."""

    def __init__(self, lookup: UserLookup) -> None:
        self._lookup = lookup
        self._users: OrderedDict[str, tuple[SlackUser, float]] = OrderedDict()

    def peek(self, user_id: str) -> SlackUser | None:
        """The person as last looked up, however long ago; no Web API call."""
        cached = self._users.get(user_id)
        return cached[0] if cached else None

    def get_cached_user(self, user_id: str) -> SlackUser | None:
        """The person as last looked up, while that lookup is fresh; no Web API call."""
        cached = self._users.get(user_id)
        if cached is None or cached[1] <= time.monotonic():
            return None
        self._users.move_to_end(user_id)
        return cached[0]

    async def fetch_user(self, user_id: str) -> SlackUser:
        """The person's display name (users.info), cached for an hour."""
        cached = self.get_cached_user(user_id)
        if cached is not None:
            return cached
        now = time.monotonic()
        ttl = USER_CACHE_TTL_S
        try:
            data = await self._lookup(user_id)
            if not data:
                ttl = 300.0
            profile = data.get("profile") or {}
            name = (
                profile.get("display_name")
                or profile.get("real_name")
                or data.get("real_name")
                or data.get("name")
                or user_id
            )
            user = SlackUser(user_id, str(name), bool(data.get("is_bot")))
        except (SlackRequestError, aiohttp.ClientError, TimeoutError):
            user, ttl = SlackUser(user_id, user_id), 300.0  # the id will do; ask again soon
        self._users[user_id] = (user, now + ttl)
        self._users.move_to_end(user_id)
        while len(self._users) > USER_CACHE_SIZE:
            self._users.popitem(last=False)
        return user

    async def fetch_names(
        self, raw: str, author_id: str, bot_user_id: str | None
    ) -> tuple[SlackUser, dict[str, str]]:
        """The author and the display names of the people `raw` mentions, the bot aside.

        At most `MAX_LOOKUPS_PER_MESSAGE` mentioned people are looked up; others are named
        only when already cached, so a message full of mentions costs a bounded number
        of users.info calls."""
        others = [u for u in mentioned_user_ids(raw) if u not in (bot_user_id, author_id)]
        looked_up = others[:MAX_LOOKUPS_PER_MESSAGE]
        author, *mentioned = await asyncio.gather(
            self.fetch_user(author_id), *(self.fetch_user(u) for u in looked_up)
        )
        names = {user.id: user.name for user in (author, *mentioned)}
        for user_id in others[MAX_LOOKUPS_PER_MESSAGE:]:
            cached = self.get_cached_user(user_id)
            if cached is not None:
                names[user_id] = cached.name
        return author, names
