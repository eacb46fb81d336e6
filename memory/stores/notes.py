"""The note store every engine offers: saving, forgetting, reading, recall and change sets.

Every write also records a change set, so any change can be reverted. Every read that
serves a conversation takes a `Visibility`, and the engine filters by it where it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory.clock import Clock
    from memory.policy.visibility import Visibility
    from memory.stores.database import Database, Transaction
    from memory.stores.index import ScopeIndex
    from memory.stores.vectors import VectorIndex
    from memory.types import Change, Note, NoteDraft, SaveResult, Scope, SearchHit

DEFAULT_MAX_NOTE_BYTES = 4096


@dataclass(frozen=True, slots=True)
class ImportResult:
    """How many notes an import created, updated and left as they were, and its change set
    (None when it changed nothing)."""

    created: int
    updated: int
    unchanged: int
    change_id: int | None = None


class NoteStore(Protocol):
    """All note reads and writes of lorebot."""

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def vectors(self) -> VectorIndex | None: ...

    def validate(self, draft: NoteDraft) -> NoteDraft:
        """Check a draft before anything is stored; raise `InvalidInput` saying why."""
        ...

    async def fetch(self, scope: Scope, topic: str) -> Note | None: ...

    async def state_in(self, tx: Transaction, scope: Scope, topic: str) -> dict[str, object] | None:
        """The stored state of one note as its change sets record it, or None."""
        ...

    async def content_fingerprint(self, scope: Scope, topic: str) -> str | None:
        """A hash of one note's content (None when there is no such note), for a card to
        be checked against when it is decided."""
        ...

    async def read(self, visibility: Visibility, topic: str) -> list[Note]:
        """The live notes named `topic` that `visibility` may read, bumping their access."""
        ...

    async def list_notes(self, scope: Scope | None = None) -> list[Note]:
        """Every live note, or those of one scope, by scope then topic."""
        ...

    async def list_scopes(self) -> list[Scope]: ...

    async def list_visible(self, visibility: Visibility) -> list[Note]:
        """Every live note `visibility` may read, by scope then topic."""
        ...

    async def index(self, scope: Scope, *, public_only: bool = False) -> ScopeIndex:
        """The index of one scope (only its public notes when `public_only`)."""
        ...

    async def indexes_for(self, visibility: Visibility) -> list[ScopeIndex]:
        """The indexes a conversation sees, in priority order, within the per-turn cap."""
        ...

    async def search(
        self,
        query: str,
        visibility: Visibility,
        *,
        k: int = 5,
        bump: bool = True,
        snippets: bool = True,
        vector: Sequence[float] | None = None,
    ) -> list[SearchHit]:
        """Top-k notes for `query` among what `visibility` may read, best first."""
        ...

    async def fetch_history(
        self, scope: Scope | None = None, topic: str | None = None, *, limit: int = 50
    ) -> list[Change]:
        """Change sets, newest first, optionally of one scope or one note."""
        ...

    async def fetch_changes_between(
        self, scope: Scope, start: datetime, end: datetime
    ) -> list[Change]:
        """Change sets of one scope in [start, end), oldest first."""
        ...

    async def fetch_change(self, change_id: int) -> Change: ...

    async def save(
        self,
        draft: NoteDraft,
        *,
        actor: str,
        reason: str = "",
        proposal_id: int | None = None,
    ) -> SaveResult:
        """Create or update the note `draft.scope`/`draft.topic`, recording a change set;
        content identical to the stored note changes nothing."""
        ...

    async def save_in(
        self,
        tx: Transaction,
        draft: NoteDraft,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> SaveResult:
        """`save` inside the caller's transaction; `draft` must be validated."""
        ...

    async def forget(
        self,
        scope: Scope,
        topic: str,
        *,
        actor: str,
        reason: str = "",
        proposal_id: int | None = None,
    ) -> Change:
        """Delete a note, keeping its last state in the change set so it can be restored."""
        ...

    async def forget_in(
        self,
        tx: Transaction,
        scope: Scope,
        topic: str,
        actor: str,
        reason: str,
        proposal_id: int | None,
    ) -> int:
        """`forget` inside the caller's transaction; returns the change id."""
        ...

    async def revert(self, change_id: int, *, actor: str, reason: str = "") -> Change:
        """Restore the note a change touched to its state before that change; for a change
        of many notes (an import), each of its notes that no later change touched."""
        ...

    async def undo(self, actor: str, *, visibility: Visibility | None = None) -> Change:
        """Revert the latest change `actor` made that is not itself a revert or reverted,
        optionally only among the changes `visibility` may see."""
        ...

    async def import_drafts(
        self,
        drafts: Sequence[NoteDraft],
        *,
        actor: str,
        labels: Sequence[str] = (),
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Save many notes in one transaction: all of them or, on any error, none. The
        import is one change set of all the notes it created or updated (none when it
        changed nothing); reverting it reverts them all."""
        ...

    async def purge_expired(self) -> int:
        """Delete notes past their expiry; their last state stays in the change sets."""
        ...
