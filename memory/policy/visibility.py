"""Which scopes a conversation may read: the one place isolation is decided.

The result is turned into SQL by the store; the prompt never enforces anything.
A note is indexed under opaque scope keys: `k…` for every note of a scope, and
`p…` only when the note is not private, so one FTS5 MATCH clause filters both the
scope and the private flag.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from memory.types import Scope, ScopeKind


@dataclass(frozen=True, slots=True)
class Viewer:
    """A speaker in a conversation: a DM when `channel` is None."""

    speaker: Scope
    channel: Scope | None = None
    team: Scope | None = None

    def __post_init__(self) -> None:
        if self.speaker.kind is not ScopeKind.USER:
            raise ValueError(f"speaker must be a user scope, got {self.speaker}")
        if self.channel is not None and self.channel.kind is not ScopeKind.CHANNEL:
            raise ValueError(f"channel must be a channel scope, got {self.channel}")
        if self.team is not None and self.team.kind is not ScopeKind.TEAM:
            raise ValueError(f"team must be a team scope, got {self.team}")

    @property
    def is_dm(self) -> bool:
        return self.channel is None


@dataclass(frozen=True, slots=True)
class Visibility:
    """Scopes whose notes are all readable, and scopes whose public notes are."""

    full: tuple[Scope, ...]
    public_only: tuple[Scope, ...]

    @property
    def scopes(self) -> tuple[Scope, ...]:
        return self.full + self.public_only

    def allows(self, scope: Scope, private: bool) -> bool:
        return scope in self.full or (scope in self.public_only and not private)


def visibility_for(viewer: Viewer) -> Visibility:
    """The DESIGN table: a DM sees the person's notes and the team's; a channel sees its
    own notes, the speaker's public user notes and the team's. Never anything else."""
    team = (viewer.team,) if viewer.team is not None else ()
    if viewer.channel is None:
        return Visibility(full=(viewer.speaker, *team), public_only=())
    return Visibility(full=(viewer.channel, *team), public_only=(viewer.speaker,))


def explicit(scopes: tuple[Scope, ...]) -> Visibility:
    """Full access to the given scopes, for operators using the CLI."""
    return Visibility(full=scopes, public_only=())


@functools.lru_cache(maxsize=65536)
def _digest(scope: Scope) -> str:
    return hashlib.blake2b(str(scope).encode(), digest_size=10).hexdigest()


def scope_keys(scope: Scope, private: bool) -> str:
    """The tokens stored in the FTS scope column for one note."""
    digest = _digest(scope)
    return f"k{digest}" if private else f"k{digest} p{digest}"


def scope_match(visibility: Visibility) -> str:
    """An FTS5 expression over the scope column that admits exactly `visibility`."""
    keys = [f"k{_digest(s)}" for s in visibility.full]
    keys += [f"p{_digest(s)}" for s in visibility.public_only]
    if not keys:
        raise ValueError("a visibility with no scopes can match nothing")
    return "scope_keys : (" + " OR ".join(keys) + ")"
