"""Splitting long replies to a platform's message limit, at paragraph or line breaks."""

from __future__ import annotations


def split_message(text: str, limit: int) -> list[str]:
    """Chunks of at most `limit` characters, broken at the last paragraph, line or word
    break that fits; a single overlong word is cut."""
    if limit <= 0:
        raise ValueError("limit must be positive")
    chunks: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n\n"), 0) or max(window.rfind("\n"), 0) or window.rfind(" ")
        if cut <= limit // 4:
            cut = limit
        chunks.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest or not chunks:
        chunks.append(rest)
    return chunks
