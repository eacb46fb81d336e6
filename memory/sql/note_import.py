"""What an import of note drafts does, on every engine: each draft checked (an error names
its line), the state each note ends in (a topic repeated in the file: its last line wins),
each touched note's item in the import's change set (its state before the import) and the
counts. Each engine writes the plan its own way (`NoteEngine.import_drafts`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

from memory.errors import InvalidInput
from memory.policy.note_states import same_content, state_after
from memory.stores.notes import ImportResult
from memory.types import NoteDraft, Scope

Key = tuple[str, str]
State = dict[str, object]


class Planned(NamedTuple):
    """One line of an import that changes its note."""

    draft: NoteDraft
    key: Key  # the note's scope and topic
    before: State | None  # the note's state before this line (None: no note yet)
    after: State
    first: bool  # the import's first line of this note: its item keeps `before`


@functools.lru_cache(maxsize=4096)
def scope_text(scope: Scope) -> str:
    return str(scope)


def validated(
    validate: Callable[[NoteDraft], NoteDraft], draft: NoteDraft, number: int, labels: Sequence[str]
) -> NoteDraft:
    """The draft of line `number` (from 0) as `validate` checks it; its `InvalidInput`
    names the line (by its label, else its number)."""
    try:
        return validate(draft)
    except InvalidInput as exc:
        label = labels[number] if number < len(labels) else f"note {number + 1}"
        raise InvalidInput(f"{label}: {exc}") from None


class ImportPlan:
    """The plan of one import, its drafts added in file order."""

    def __init__(self, stored: dict[Key, State], *, actor: str, now: str) -> None:
        self.stored = stored  # the kept state of each note of the import that exists
        self.states = dict(stored)  # each note's state as the lines so far leave it
        # Each note the import changes, in the order of its first line: its state before.
        self.items: dict[Key, State | None] = {}
        self.counts = {"create": 0, "update": 0, "unchanged": 0}
        self._actor = actor
        self._now = now  # UTC text, as states keep times

    def add(self, draft: NoteDraft) -> Planned | None:
        """Plan the next line (its draft validated by the caller); None when it changes
        nothing."""
        key = (scope_text(draft.scope), draft.topic)
        before = self.states.get(key)
        after = state_after(draft, before, self._actor, self._now)
        if before is not None and same_content(before, after):
            self.counts["unchanged"] += 1
            return None
        self.counts["create" if before is None else "update"] += 1
        self.states[key] = after
        first = key not in self.items
        if first:
            self.items[key] = before
        return Planned(draft, key, before, after, first)

    def result(self, change_id: int | None) -> ImportResult:
        """What the import did; its change set is `change_id` unless it changed nothing."""
        return ImportResult(
            self.counts["create"],
            self.counts["update"],
            self.counts["unchanged"],
            change_id if self.items else None,
        )
