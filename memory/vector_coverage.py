"""How many items have a vector yet, and what a ranking's reader is told when vectors are
missing: the query got none, or only some notes or messages have one."""

from __future__ import annotations

from dataclasses import dataclass

from memory.vector_tables import NOTE


@dataclass(frozen=True, slots=True)
class Coverage:
    """Items of one kind with an up-to-date vector, of all that should have one."""

    embedded: int
    total: int

    @property
    def partial(self) -> bool:
        return self.embedded < self.total


def words_alone_notice(model: str) -> str:
    """What a ranking's reader should know when the embedding model gave the query no
    vector, so everything was ranked by its words."""
    return f"ranked by words alone: the embedding model {model} did not answer"


def coverage_notice(kind: str, coverage: Coverage) -> str | None:
    """What a ranking's reader should know when only some items have a vector yet."""
    if not coverage.partial:
        return None
    items = "notes" if kind == NOTE else "messages"
    return (
        f"vectors for {coverage.embedded:,} of {coverage.total:,} {items}; the rest are "
        "ranked by their words alone until lorebot has embedded them"
    )
