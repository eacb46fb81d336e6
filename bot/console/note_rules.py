"""Which notes a signed-in person may read and change, by chat's rules: their own notes,
their channels' and their team's (as their platform said at sign-in); team notes are
changed by admins only, and a read-only channel's notes by nobody."""

from __future__ import annotations

from bot.config.sections import BotSettings
from bot.console.people import Person
from memory.types import Change, Scope, ScopeKind


def may_read(person: Person, scope: Scope) -> bool:
    return person.admin or scope == person.scope or str(scope) in person.scopes


def change_refused(person: Person, scope: Scope, settings: BotSettings) -> str | None:
    """Why `person` may not change the notes of `scope`, or None when they may."""
    if not may_read(person, scope):
        return "These notes are not yours to change."
    if scope.kind is ScopeKind.CHANNEL and str(scope) in settings.read_only_channels:
        return f"The notes of {scope} are read-only: they are changed on the server."
    if scope.kind is ScopeKind.TEAM and not person.admin:
        return "Only an admin can change the team's notes."
    return None


def undo_refused(person: Person, change: Change, settings: BotSettings) -> str | None:
    """Why `person` may not undo `change`, or None when they may: as chat's `undo`, a
    person undoes changes of their own (an admin, anyone's), never an undo, and only where
    they may change the notes."""
    if change.scope is None or change.action == "revert":
        return "An undo is not undone: change the note again instead."
    if change.reverted_by is not None:
        return f"Change #{change.id} was undone already."
    if not person.admin and change.actor != person.user_id:
        return "Only who made a change, or an admin, can undo it."
    return change_refused(person, change.scope, settings)
