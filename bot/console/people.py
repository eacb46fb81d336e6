"""Who is signed in to the console, and what they may read: the visibility chat gives them.

A member reads their own notes (private ones too), and those of the teams and channels
their platform said they are in when they signed in; an admin (`bot.admins`) reads every
scope. The result is a `Visibility`, which the stores turn into SQL: the check is in the
query, as in chat, so no id typed into an address reveals more.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from adapters.base import UserRef
from memory.policy.visibility import Visibility, explicit
from memory.scope_ids import raw_id
from memory.types import Scope, ScopeKind


@dataclass(frozen=True, slots=True)
class Person:
    """A signed-in person: their user scope, whether they are an admin, the channel and
    team scopes they were in at sign-in, and their session's form token."""

    user_id: str
    admin: bool
    scopes: tuple[str, ...] = ()
    csrf: str = ""
    via: str = ""

    @property
    def scope(self) -> Scope:
        return Scope.parse(self.user_id)

    @property
    def user(self) -> UserRef:
        """The person as the adapters name them."""
        scope = self.scope
        return UserRef(scope.platform, raw_id(scope.id))

    def visibility(self) -> Visibility | None:
        """What this person may read; None for an admin: every scope."""
        if self.admin:
            return None
        return explicit((self.scope, *(Scope.parse(s) for s in self.scopes)))

    def visibility_of(self, scope: Scope) -> Visibility:
        """What this person may read of one scope (nothing when it is not theirs)."""
        if self.admin or scope == self.scope or str(scope) in self.scopes:
            return explicit((scope,))
        return Visibility(full=(), public_only=())

    def reads_private_of_another(self, scope: Scope) -> bool:
        """Whether opening a private note of `scope` is an admin reading someone else's,
        which the audit records."""
        return scope.kind is ScopeKind.USER and scope != self.scope


@dataclass(frozen=True, slots=True)
class Visitor:
    """Who sent a request: the person signed in (None: nobody yet), and the form token the
    page carries (the session's; before signing in, the form cookie's)."""

    person: Person | None
    csrf: str


VISITOR = web.RequestKey("visitor", Visitor)
