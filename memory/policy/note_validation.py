"""The checks a note draft passes before anything is stored: topic, summary, size, no
credentials, confidence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memory.errors import InvalidInput
from memory.policy.redaction import find_secret, mask_known
from memory.types import SUMMARY_MAX_CHARS, NoteDraft, validate_topic


def validate_draft(draft: NoteDraft, max_note_bytes: int, secrets: Sequence[str]) -> NoteDraft:
    """`draft` with its summary on one line; raise `InvalidInput` saying why not."""
    validate_topic(draft.topic)
    summary = " ".join(draft.summary.split())
    if not summary:
        raise InvalidInput("a note needs a one-line summary")
    if len(summary) > SUMMARY_MAX_CHARS:
        raise InvalidInput(
            f"the summary is {len(summary)} characters; keep it under {SUMMARY_MAX_CHARS} "
            "and put the details in the body"
        )
    size = len(draft.body.encode())
    if size > max_note_bytes:
        raise InvalidInput(
            f"the note is {size} bytes, over the limit of {max_note_bytes}: split it "
            f"into smaller notes with their own topics (for example {draft.topic}-part-1 "
            f"and {draft.topic}-part-2), each under {max_note_bytes} bytes"
        )
    text = f"{draft.topic}\n{summary}\n{draft.body}"
    secret = find_secret(text)
    if secret is None and mask_known(text, secrets) != text:
        secret = "one of lorebot's configured secrets"
    if secret is not None:
        raise InvalidInput(
            f"not saved: the note contains {secret}. Credentials do not belong in "
            "notes; store them in a secret manager and note where to find them"
        )
    if not 0.0 <= draft.confidence <= 1.0:
        raise InvalidInput("confidence must be between 0 and 1")
    return draft if summary == draft.summary else replace(draft, summary=summary)
