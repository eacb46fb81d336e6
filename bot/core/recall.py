"""What a turn recalls for the message: notes and past messages the conversation may read,
ranked by words and, with an embedding model, by vectors, and what the model should know
about how they were ranked."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bot.config.settings import Settings
from bot.context.turn import TurnContext
from bot.core.prompt import BYTES_PER_TOKEN, note_line
from memory import Category, NoteStore, SearchHit
from memory.ranking import term_overlap
from memory.stores.conversations import ConversationLog, HistoryEntry, MessageHit
from memory.stores.vectors import KINDS, NOTE, coverage_notice, words_alone_notice

_log = logging.getLogger(__name__)


class Recall:
    """Recall for one agent: its settings, notes and conversation log."""

    def __init__(self, settings: Settings, notes: NoteStore, log: ConversationLog) -> None:
        self.settings = settings
        self.notes = notes
        self.log = log
        self._coverage_said: dict[str, str | None] = {}  # kind: the notice last logged

    async def fetch_notes(
        self, ctx: TurnContext, text: str, vector: Sequence[float] | None = None
    ) -> list[SearchHit]:
        """Every note recall finds for the message; a reflection only when it clearly
        concerns the message. An answer without the model shows them all; the prompt
        leaves out those the history already shows (`not_shown`)."""
        hits = await self.notes.search(
            text, ctx.visibility, k=self.settings.memory.recall_k, snippets=False, vector=vector
        )
        gate = self.settings.jobs.reflection_min_overlap
        return [
            hit
            for hit in hits
            if hit.note.category is not Category.REFLECTION
            or term_overlap(text, f"{hit.note.summary} {hit.note.body}") >= gate
        ]

    async def fetch_messages(
        self,
        ctx: TurnContext,
        text: str,
        history: Sequence[HistoryEntry],
        vector: Sequence[float] | None = None,
    ) -> list[MessageHit]:
        """Past messages this conversation may read that match the message, leaving out
        those its history (`history`) already puts in the prompt."""
        k = self.settings.memory.recall_k
        if k <= 0:
            return []
        shown = {entry.id for entry in history}
        # Twice as many as wanted, since some may be in the history already: fewer than k
        # may remain, and a larger pool made every turn measurably slower.
        found = await self.log.search(
            text, ctx.visibility, k=2 * k, vectors=self.notes.vectors, vector=vector
        )
        return [hit for hit in found if hit.id not in shown][:k]

    async def fetch_both(
        self,
        ctx: TurnContext,
        text: str,
        history: Sequence[HistoryEntry],
        vector: Sequence[float] | None = None,
    ) -> tuple[list[SearchHit], list[MessageHit]]:
        """`fetch_notes` and `fetch_messages`, searched at once: on PostgreSQL each waits
        on a connection of its own."""
        notes = asyncio.ensure_future(self.fetch_notes(ctx, text, vector))
        try:
            messages = await self.fetch_messages(ctx, text, history, vector)
        except BaseException:
            notes.cancel()
            raise
        return await notes, messages

    async def query_vector(self, text: str) -> list[float] | None:
        """The message's vector, computed once for both recalls (None without vectors)."""
        vectors = self.notes.vectors
        return await vectors.query_vector(text) if vectors is not None and vectors.enabled else None

    async def fetch_notices(self, vector: Sequence[float] | None) -> list[str]:
        """What the model should know about how recall ranked, when an embedding model is
        set: by words alone (no vector for the message), or with vectors for only some of
        the notes or messages."""
        vectors = self.notes.vectors
        if vectors is None or vectors.embedder is None:
            return []
        if vector is None:
            return [words_alone_notice(vectors.embedder.model)]
        notices = []
        for kind in KINDS:
            gap = await vectors.fetch_gap(kind)
            notice = None if gap is None else coverage_notice(kind, gap)
            self._log_coverage(kind, notice)
            if notice is not None:
                notices.append(notice)
        return notices

    def _log_coverage(self, kind: str, notice: str | None) -> None:
        """Log a coverage notice once, when it changes, and when it is over."""
        said = self._coverage_said.get(kind)
        if notice == said:
            return
        self._coverage_said[kind] = notice
        if notice is not None:
            _log.info("recall: %s", notice)
        elif said is not None:
            _log.info("recall: every %s has its vector now", "note" if kind == NOTE else "message")

    def budget(self, index_bytes: int) -> int:
        """Bytes left for recalled notes once the indexes took their share of the budget."""
        return max(0, self.settings.memory.token_budget * BYTES_PER_TOKEN - index_bytes)


def not_shown(hits: Sequence[SearchHit], history: Sequence[HistoryEntry]) -> list[SearchHit]:
    """The notes of `hits` the history does not already show as recalled, unchanged: the
    prompt has those, and the new turn stays short (and cheap for the model's cache)."""
    recalled = "\n".join(entry.prompt for entry in history if entry.prompt)
    return [hit for hit in hits if note_line(hit) not in recalled]
