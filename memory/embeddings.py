"""What the vectors of every engine share: the model they come from (`EmbeddingState`), the
text of a note or message that is embedded, how long to wait on a failing model, and what
lorebot says when the configured model is not the one of the stored vectors.

Both engines embed the same text the same way, so a store copied between them keeps the
meaning of its vectors, and their messages read alike in `lorebot doctor`.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.errors import EmbedderUnavailable, StoreError

BATCH_SIZE = 32
# How much of a note or message is embedded; small embedding models read ~512 tokens.
EMBED_MAX_CHARS = 2000
# Characters of the previous message a message carries, in its vector and word index.
PREVIOUS_CHARS = 400
QUERY_CACHE_SIZE = 256  # recent query vectors kept (about 1.5 KB each at 384 dimensions)
# How long to wait after a failure when the embedder does not say (its `retry_after`).
RETRY_S = 30.0
# While items wait for their vector, how often a turn's coverage figures are counted again:
# counting is a scan of every note (or message), too slow for every turn of a large store.
COVERAGE_RECOUNT_S = 30.0


@dataclass(frozen=True, slots=True)
class EmbeddingState:
    """The model the stored vectors come from, and the generation of their tables."""

    model: str
    dim: int
    generation: int

    def table(self, kind: str) -> str:
        return f"vec_{kind}s_{self.generation}"

    def describe(self) -> str:
        return f"{self.model} ({self.dim} dimensions)"


def note_text(topic: str, summary: str, body: str) -> str:
    return f"{topic.replace('-', ' ')}: {summary}\n{body}".strip()[:EMBED_MAX_CHARS]


def message_text(content: str, before: str | None = None) -> str:
    """A message is embedded after the one before it, so a short reply ("yep, 8443")
    carries what it answers (+5 points of hit@10 in benchmarks/recall_quality.py)."""
    text = f"{before[:PREVIOUS_CHARS]}\n{content}" if before else content
    return text.strip()[:EMBED_MAX_CHARS]


def retry_after(exc: StoreError) -> float:
    """Seconds to wait before asking the embedder again after `exc`."""
    delay = exc.retry_after if isinstance(exc, EmbedderUnavailable) else None
    return RETRY_S if delay is None else delay


def mismatch(stored: EmbeddingState, model: str, dim: int | None = None) -> str:
    """Why the configured `model` (answering with `dim` dimensions, when known) cannot use
    the stored vectors, and the two ways on."""
    if model == stored.model:  # the same name answers with another dimension
        return (
            f"the stored vectors were made by {stored.describe()}, but {model} now returns "
            f"{dim} dimensions (was it replaced in Ollama?). Nothing was changed. Run "
            "`lorebot notes reembed` to re-embed every note and message with it (it can be "
            "interrupted and resumed)"
        )
    configured = model if dim is None else f"{model} ({dim} dimensions)"
    return (
        f"the stored vectors were made by {stored.describe()}, but ollama.embed_model is "
        f"{configured}. Nothing was changed. Either set ollama.embed_model back to "
        f"{stored.model}, or run `lorebot notes reembed` to re-embed every note and message "
        "with the new model (it can be interrupted and resumed)"
    )


def batch_mismatch(state: EmbeddingState, dim: int) -> str:
    """Why a batch of vectors of `dim` dimensions cannot be stored beside those of `state`."""
    return (
        f"the embedding model returned {dim} dimensions, but the store holds vectors of "
        f"{state.describe()}: run `lorebot notes reembed`"
    )
