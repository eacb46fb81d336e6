"""Detection and redaction of credentials, so they never become notes, events or log lines.

Each pattern has a cheap prefilter on the lowercased text: the full regular expressions
are slow on ordinary prose, and almost every text has no credential at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_TOKEN_SHAPE = re.compile(r"\.[a-z0-9_-]{6,7}\.")
_ASSIGNMENT_WORDS = ("pass", "pwd", "secret", "key", "token")


def _contains(*needles: str) -> Callable[[str], bool]:
    return lambda lower: any(needle in lower for needle in needles)


@dataclass(frozen=True, slots=True)
class SecretPattern:
    """What a credential looks like; `name` says what was found, so a refusal can say why.

    A case-insensitive pattern is also given as `lower`, a case-sensitive form searched in
    the lowercased text: the same test, several times faster."""

    name: str
    pattern: re.Pattern[str]
    prefilter: Callable[[str], bool]
    lower: re.Pattern[str] | None = None

    def found_in(self, text: str, lowered: str) -> bool:
        if not self.prefilter(lowered):
            return False
        if self.lower is not None:
            return self.lower.search(lowered) is not None
        return self.pattern.search(text) is not None


_ASSIGNMENT = (
    r"(?:pass(?:word|wd|phrase)|pwd|secret|api[_-]?key|(?:access|auth)[_-]?token|"
    r"client[_-]?secret)\s*[:=]\s*['\"]?[^\s'\"]{3,}"
)
_AWS_SECRET = r"aws_?secret_?(?:access_?)?key\s*[:=]\s*['\"]?[a-z0-9/+=]{40}"


SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern("a Slack token", re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}"), _contains("xox")),
    SecretPattern(
        "a Slack app token", re.compile(r"xapp-\d+-[A-Za-z0-9-]{10,}"), _contains("xapp-")
    ),
    SecretPattern(
        "a Discord bot token",
        re.compile(r"[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}"),
        lambda lower: _TOKEN_SHAPE.search(lower) is not None,
    ),
    SecretPattern(
        "an AWS access key",
        re.compile(r"A(?:KIA|SIA|GPA|IDA|ROA)[0-9A-Z]{16}\b"),
        _contains("akia", "asia", "agpa", "aida", "aroa"),
    ),
    SecretPattern(
        "an AWS secret key",
        re.compile(_AWS_SECRET, re.IGNORECASE),
        _contains("aws"),
        re.compile(_AWS_SECRET),
    ),
    SecretPattern(
        "a private key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        _contains("private key"),
    ),
    SecretPattern(
        "a password or secret assignment",
        re.compile(_ASSIGNMENT, re.IGNORECASE),
        _contains(*_ASSIGNMENT_WORDS),
        re.compile(_ASSIGNMENT),
    ),
)


def find_secret(text: str) -> str | None:
    """Return a description of the first kind of credential found in `text`, or None."""
    lowered = text.lower()
    for secret in SECRET_PATTERNS:
        if secret.found_in(text, lowered):
            return secret.name
    return None


def redact(text: str) -> str:
    """Replace every credential in `text` with `[REDACTED]`."""
    lower = text.lower()
    for secret in SECRET_PATTERNS:
        if secret.prefilter(lower):
            text = secret.pattern.sub("[REDACTED]", text)
    return text
