"""Embedding models behind one small interface: Ollama's `/api/embed` in lorebot, any other
local model (e.g. sentence-transformers in the benchmarks) through the same two members."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import httpx
import ollama

from memory.errors import EmbedderUnavailable, StoreError

_log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Turns texts into vectors of one fixed dimension."""

    @property
    def model(self) -> str:
        """The model's name, recorded with the vectors it makes."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; `EmbedderUnavailable` when the model is out of
        reach (the caller retries later), `StoreError` for anything else."""
        ...


def model_name(name: str) -> str:
    """Ollama's full name of a model: `nomic-embed-text` is `nomic-embed-text:latest`."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class OllamaEmbedder:
    """Embeddings from Ollama's `/api/embed`, batched by the caller."""

    def __init__(self, host: str, model: str, *, timeout_s: float = 60.0) -> None:
        self._model = model_name(model)
        self._client = ollama.AsyncClient(host=host, timeout=timeout_s)

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            response = await self._client.embed(model=self._model, input=list(texts))
        except (httpx.TransportError, ConnectionError) as exc:
            raise EmbedderUnavailable(f"Ollama is unreachable for embeddings: {exc}") from exc
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise StoreError(
                    f"the embedding model {self._model} is not in Ollama: "
                    f"run `ollama pull {self._model}`"
                ) from exc
            raise EmbedderUnavailable(f"Ollama refused the embedding: {exc.error}") from exc
        vectors = [list(v) for v in response.embeddings]
        if len(vectors) != len(texts):
            raise StoreError(f"Ollama returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    async def aclose(self) -> None:
        await self._client.close()  # type: ignore[no-untyped-call]
