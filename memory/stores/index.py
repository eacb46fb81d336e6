"""Rendering a scope's index: the `- topic: summary` lines a prompt carries.

Which notes an index shows is decided by `select_index` (pinned first, then most
recently updated) so it changes only when notes change; the shown lines are then
sorted by topic, so the rendered text is byte-identical between turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.types import Scope

INDEX_MAX_LINES = 40
INDEX_MAX_BYTES = 2048
TURN_MAX_BYTES = 6144


@dataclass(frozen=True, slots=True)
class ScopeIndex:
    """The shown lines of one scope's index and how many notes it leaves out."""

    scope: Scope
    lines: tuple[str, ...]
    hidden: int

    def render(self) -> str:
        return "\n".join(self.lines)

    @property
    def size(self) -> int:
        return len(self.render().encode())


def select_index(
    ranked: Iterable[str], *, max_lines: int = INDEX_MAX_LINES, max_bytes: int = INDEX_MAX_BYTES
) -> tuple[list[str], int]:
    """Take index lines in rank order (pinned, then newest) while they fit; return them and
    the count left out. A line that does not fit is skipped, not truncated."""
    shown: list[str] = []
    hidden = 0
    used = 0
    for line in ranked:
        cost = len(line.encode()) + (1 if shown else 0)
        if len(shown) < max_lines and used + cost <= max_bytes:
            shown.append(line)
            used += cost
        else:
            hidden += 1
    return shown, hidden


def build_index(scope: Scope, ranked: Iterable[str], **caps: int) -> ScopeIndex:
    shown, hidden = select_index(ranked, **caps)
    return ScopeIndex(scope=scope, lines=tuple(sorted(shown)), hidden=hidden)


def fit_turn(indexes: Sequence[ScopeIndex], max_bytes: int = TURN_MAX_BYTES) -> list[ScopeIndex]:
    """Keep all indexes of a turn within `max_bytes`, in the given priority order: an index
    that does not fit whole keeps its first lines that do, and the rest count as hidden."""
    kept: list[ScopeIndex] = []
    used = 0
    for index in indexes:
        lines: list[str] = []
        for line in index.lines:
            cost = len(line.encode()) + 1
            if used + cost > max_bytes:
                break
            lines.append(line)
            used += cost
        dropped = len(index.lines) - len(lines)
        kept.append(ScopeIndex(index.scope, tuple(lines), index.hidden + dropped))
    return kept
