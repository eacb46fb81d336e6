"""Splitting long replies to a platform's message limit, at paragraph or line breaks, and
cutting a reply that is too long to post at all."""

from __future__ import annotations

from collections.abc import Callable


def split_message(text: str, limit: int, measure: Callable[[str], int] = len) -> list[str]:
    """Chunks of at most `limit` characters as `measure` counts them (a platform's markup
    may make a text longer), broken at the last paragraph, line or word break that fits;
    a single overlong word is cut. This is the one place replies are split."""
    if limit <= 0:
        raise ValueError("limit must be positive")
    chunks: list[str] = []
    rest = text.strip()
    while measure(rest) > limit:
        size = _fitting(rest, limit, measure)
        window = rest[:size]
        # The last paragraph break, else line break, else space, that leaves the chunk at
        # least a quarter full: an early paragraph break must not force a cut mid-word.
        breaks = (window.rfind("\n\n"), window.rfind("\n"), window.rfind(" "))
        cut = next((at for at in breaks if at > size // 4), size)
        chunks.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest or not chunks:
        chunks.append(rest)
    return chunks


def _fitting(text: str, limit: int, measure: Callable[[str], int]) -> int:
    """The longest start of `text` (in characters) that `measure` counts within `limit`,
    found by bisection since markup makes the count grow unevenly; at least one."""
    low, high = 1, min(len(text), limit)
    if measure(text[:high]) <= limit:
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if measure(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def clip_reply(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters; else its start, cut at a line or word break,
    with a visible notice, all within `limit` (a code block left open is closed)."""
    if len(text) <= limit:
        return text
    notice = f"\n\n… (reply cut at {limit} characters)"
    room = limit - len(notice) - len("\n```")
    if room <= 0:
        raise ValueError("limit is too small for the notice")
    window = text[:room]
    cut = next((c for c in (window.rfind("\n"), window.rfind(" ")) if c > room // 2), room)
    kept = window[:cut].rstrip()
    if kept.count("```") % 2:
        kept += "\n```"
    return kept + notice
