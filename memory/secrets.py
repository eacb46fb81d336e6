"""Detection and redaction of credentials, so they never become notes or events."""

from __future__ import annotations

import re

# Each pattern names what it found, so a refusal can say why.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    ("a Slack app token", re.compile(r"\bxapp-\d+-[A-Za-z0-9-]{10,}")),
    (
        "a Discord bot token",
        re.compile(r"\b[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}\b"),
    ),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    (
        "an AWS secret key",
        re.compile(r"(?i)aws_?secret_?(?:access_?)?key\s*[:=]\s*['\"]?[A-Za-z0-9/+=]{40}"),
    ),
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    (
        "a password or secret assignment",
        re.compile(
            r"(?i)(?<![a-z])(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|"
            r"auth[_-]?token|client[_-]?secret)\s*[:=]\s*['\"]?[^\s'\"]{3,}"
        ),
    ),
)


def find_secret(text: str) -> str | None:
    """Return a description of the first credential in `text`, or None."""
    for name, pattern in SECRET_PATTERNS:
        if pattern.search(text):
            return name
    return None


def redact(text: str) -> str:
    """Replace every credential in `text` with `[REDACTED]`."""
    for _, pattern in SECRET_PATTERNS:
        text = pattern.sub("[REDACTED]", text)
    return text
