"""`lorebot notes search`: notes, or past messages with `--history`, as the person (or
the scopes) given may read them, ranked as a turn's recall ranks them."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from bot.cli.common import open_store, print_json
from bot.errors import UserError

# What only the search uses is imported in it: `notes search` starts fast.
if TYPE_CHECKING:
    from bot.storage import StoreSettings
    from memory import Visibility
    from memory.stores.vectors import VectorIndex


def _search_visibility(args: argparse.Namespace) -> Visibility:
    from memory.policy.visibility import Viewer, explicit, visibility_for

    if args.speaker is not None:
        if args.scopes:
            raise UserError("use either --scope or --as/--in/--team, not both")
        try:
            return visibility_for(Viewer(args.speaker, args.channel, args.team))
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if args.channel is not None or args.team is not None:
        raise UserError("--in and --team need --as USER_SCOPE (the person asking)")
    if not args.scopes:
        raise UserError("say where to search: --scope SCOPE (repeatable) or --as USER_SCOPE")
    return explicit(tuple(args.scopes))


async def cmd_search(args: argparse.Namespace, settings: StoreSettings) -> int:
    from memory.stores.vectors import NOTE

    visibility = _search_visibility(args)
    if args.history:
        return await _search_history(args, settings, visibility)
    async with open_store(settings, vectors=True) as store:
        vector = await _query_vector(store.vectors, args.query, NOTE)
        hits = await store.search(args.query, visibility, k=args.k, vector=vector)
    found = [
        (
            {
                "scope": str(h.note.scope),
                "topic": h.note.topic,
                "summary": h.note.summary,
                "score": h.score,
                "snippet": h.snippet,
            },
            f"{h.note.scope}  {h.note.index_line}\n    {h.snippet}",
        )
        for h in hits
    ]
    return _print_found(found, as_json=args.json)


async def _query_vector(vectors: VectorIndex | None, query: str, kind: str) -> list[float] | None:
    """The query's vector when an embedding model is set, saying on stderr when the ranking
    is by words alone, or when only some notes (or messages) have a vector yet."""
    from memory.stores.vectors import coverage_notice, words_alone_notice

    if vectors is None or vectors.embedder is None:
        return None
    coverage = await vectors.coverage(kind)
    vector = await vectors.query_vector(query)
    if vector is None and coverage.total:
        _say(words_alone_notice(vectors.embedder.model))
    elif (notice := coverage_notice(kind, coverage)) is not None:
        _say(notice)
    return vector


def _say(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


def _print_found(found: list[tuple[dict[str, Any], str]], *, as_json: bool) -> int:
    """Search results as a JSON array, or as text (one entry per result)."""
    if as_json:
        print_json([fields for fields, _ in found])
        return 0
    if not found:
        print("nothing found")
    for _, text in found:
        print(text)
    return 0


async def _search_history(
    args: argparse.Namespace, settings: StoreSettings, visibility: Visibility
) -> int:
    from bot.storage import open_memory
    from memory.stores.vectors import MESSAGE

    memory = await open_memory(settings, probe=False)
    try:
        vector = await _query_vector(memory.vectors, args.query, MESSAGE)
        hits = await memory.log.search(
            args.query, visibility, k=args.k, vectors=memory.vectors, vector=vector
        )
    finally:
        await memory.close()
    found = [
        (
            {
                "scope": h.scope,
                "conversation": h.conversation,
                "author": h.author_name,
                "role": h.role,
                "content": h.content,
                "at": h.created_at,
                "link": h.link,
                "score": h.score,
            },
            f"{h.created_at[:16].replace('T', ' ')}  {h.author_name or h.role}  ({h.scope})  "
            f"{h.link or h.conversation}\n    {' '.join(h.content.split())[:300]}",
        )
        for h in hits
    ]
    return _print_found(found, as_json=args.json)
