"""The interface of embedding models: Ollama's `/api/embed` in lorebot (`bot.model.ollama`),
any other local model (e.g. sentence-transformers in the benchmarks) through the same two
members."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Embedder(Protocol):
    """Turns texts into vectors of one fixed dimension."""

    @property
    def model(self) -> str:
        """The model's name, recorded with the vectors it makes."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; `EmbedderUnavailable` when the model cannot
        answer now (the caller retries later, after its `retry_after` when it has one),
        `StoreError` for anything else."""
        ...


def model_name(name: str) -> str:
    """Ollama's full name of a model: `nomic-embed-text` is `nomic-embed-text:latest`."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
