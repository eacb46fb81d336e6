"""Errors raised by the memory store.

`InvalidInput` carries a message meant for the person who caused it; every other
`StoreError` is an operator-level failure.
"""

from __future__ import annotations


class StoreError(Exception):
    """Root of every error the memory package raises."""


class InvalidInput(StoreError, ValueError):
    """Bad input from a person: the message says what is wrong and how to fix it.

    A ValueError too, so pydantic validators report it as a field error."""


class NotFound(InvalidInput):
    """A note, change or scope that the request names does not exist."""


class Conflict(InvalidInput):
    """The request no longer applies because the data changed since."""


class StoreUnavailable(StoreError):
    """The database cannot take a write now (locked by another process past the busy
    timeout, or unreachable); nothing was written, and a later try may succeed."""


class SchemaTooNew(StoreError):
    """The database was written by a newer lorebot; it is left untouched."""


class EmbeddingMismatch(StoreError):
    """The configured embedding model is not the one the stored vectors were made with;
    nothing was changed."""


class EmbedderUnavailable(StoreError):
    """The embedding model cannot answer now; notes wait in the queue for it.
    `retry_after`: seconds to wait before asking again, when the embedder knows."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
