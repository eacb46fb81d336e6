"""Detection and redaction of credentials, so they never become notes, events, stored
messages or log lines.

Text is normalised first (NFKC, invisible format characters removed), so a token with a
zero-width space inside or a full-width `＝` is still seen. Each pattern of
`memory.policy.secret_patterns` has a cheap prefilter on the lowercased text: almost no text
holds a credential, and the regular expressions only run when a pattern's marker is
present.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from memory.policy.secret_patterns import KEY_KINDS, SECRET_PATTERNS, SecretPattern

REDACTED = "[REDACTED]"
# A known secret value shorter than this is not masked: it cannot be told from a word.
MIN_SECRET_CHARS = 6

# Unicode format characters (category Cf) and the other invisible "default ignorable"
# ones: joiners, bidi controls, BOM, soft hyphen, fillers and variation selectors.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def normalise(text: str) -> str:
    """The text as it is scanned: NFKC, with invisible format characters removed."""
    if text.isascii():
        return text
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", _INVISIBLE.sub("", text)))


_SECRET_NAME = re.compile(
    r"(?:password|passwd|passphrase|secret|token|(?:^|[_.-])(?:pass|pwd)|"
    rf"(?:{'|'.join(KEY_KINDS)})[_-]?key)"
)


def is_secret_name(name: str) -> bool:
    """Whether a field called `name` holds a credential (`password`, `DB_PASS`,
    `client_secret`, `api-key`), so its value is redacted whatever it looks like."""
    lowered = name.strip().strip("\"'").lower()
    return any(m.end() == len(lowered) for m in _SECRET_NAME.finditer(lowered))


_NEEDLES = tuple(sorted({needle for secret in SECRET_PATTERNS for needle in secret.needles}))
_ALWAYS = tuple(secret for secret in SECRET_PATTERNS if not secret.needles and secret.gate is None)
# Letters from the most to the least common in prose; other characters are rarer still.
_COMMON_CHARS = " etaoinsrhldcumfpgwybvkxjqz"


def _gate_char(needle: str) -> str:
    """The needle's character least common in ordinary text."""
    return max(needle, key=lambda c: _COMMON_CHARS.index(c) if c in _COMMON_CHARS else 99)


# The needles grouped by that character: a text without it holds none of the group, and
# looking for one character is far cheaper than looking for each needle of the group.
_GATED = tuple(
    (gate, tuple(needle for needle in _NEEDLES if _gate_char(needle) == gate))
    for gate in sorted({_gate_char(needle) for needle in _NEEDLES})
)


@functools.lru_cache(maxsize=1024)
def _patterns_for(present: frozenset[str]) -> tuple[SecretPattern, ...]:
    """The patterns whose needles (if any) are among `present`, in table order. Texts
    share a few such sets, so each is worked out once."""
    return tuple(
        secret
        for secret in SECRET_PATTERNS
        if not secret.needles or not present.isdisjoint(secret.needles)
    )


def _candidates(lowered: str) -> Sequence[SecretPattern]:
    """The patterns worth trying: those whose needles are present (each group of needles
    looked for only where its character is), then each pattern's gate."""
    present = {
        needle
        for gate, needles in _GATED
        if gate in lowered
        for needle in needles
        if needle in lowered
    }
    if not present:
        return _ALWAYS
    return [
        secret
        for secret in _patterns_for(frozenset(present))
        if secret.gate is None or secret.gate.search(lowered) is not None
    ]


def _misses(secret: SecretPattern, clean: str, lowered: str) -> bool:
    """Whether one plain search shows `secret` has no match in the text: most texts hold
    none, and that search is much cheaper than the match loop of `spans`."""
    if len(lowered) != len(clean):
        return False  # `spans` searches another way here
    return secret.pattern.search(lowered if secret.lower else clean) is None


def find_secret(text: str) -> str | None:
    """Return a description of the first kind of credential found in `text`, or None."""
    clean = normalise(text)
    lowered = clean.lower()
    for secret in _candidates(lowered):
        if not _misses(secret, clean, lowered) and next(secret.spans(clean, lowered), None):
            return secret.name
    return None


def redact(text: str, known: Iterable[str] = ()) -> str:
    """`text` with every credential, and every `known` secret value, replaced by
    `[REDACTED]`; key names and URL parts stay (`password=[REDACTED]`). Text with nothing
    to redact comes back unchanged; otherwise it comes back normalised."""
    clean = normalise(text)
    spans = secret_spans(clean, known)
    if not spans:
        return text
    return mask_spans(clean, spans)


def secret_spans(clean: str, known: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Where `redact` masks in `clean`, a text already normalised (`normalise`): the start
    and end of each credential and each `known` secret value, overlapping or not."""
    lowered = clean.lower()
    spans: list[tuple[int, int]] = []
    for secret in _candidates(lowered):
        if not _misses(secret, clean, lowered):
            spans += secret.spans(clean, lowered)
    spans += _known_spans(clean, known)
    return spans


def _known_spans(text: str, known: Iterable[str]) -> Iterator[tuple[int, int]]:
    for secret in known:
        value = _known_value(secret)
        if len(value) < MIN_SECRET_CHARS:
            continue  # too short to tell apart from ordinary words
        start = text.find(value)
        while start >= 0:
            yield start, start + len(value)
            start = text.find(value, start + len(value))


@functools.lru_cache(maxsize=64)
def _known_value(secret: str) -> str:
    """A known secret as it appears in normalised text; the same few are asked for on
    every message."""
    return normalise(secret)


def mask_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each run of overlapping or touching spans replaced by one marker."""
    pieces: list[str] = []
    position = 0
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in merged:
        pieces += [text[position:start], REDACTED]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def redact_value(value: Any, key: str = "", known: Sequence[str] = ()) -> Any:
    """`value` (text, or JSON-like lists and mappings) with credentials, and every `known`
    secret value, redacted; anything under a key that names a secret (`password`,
    `api_key`) is, whatever it looks like."""
    if isinstance(value, Mapping):
        return {str(k): redact_value(v, str(k), known) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, key, known) for v in value]
    if key and is_secret_name(key) and value not in (None, "") and not isinstance(value, bool):
        return REDACTED
    if isinstance(value, str):
        return redact(value, known)
    return value


def mask_known(text: str, known: Iterable[str]) -> str:
    """`text` with every `known` secret value replaced by `[REDACTED]`, and nothing else
    changed: for text a person reads as written, such as the model's reply."""
    clean = normalise(text)
    spans = list(_known_spans(clean, known))
    return mask_spans(clean, spans) if spans else text
