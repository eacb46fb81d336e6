"""Embeddings for one-shot commands (`notes search`, `notes list`, `notes show`): one POST
to Ollama's `/api/embed`, or an OpenAI-compatible server's `/embeddings`, with the
standard library's HTTP client.

The ollama client takes about 0.4 s to import (its pydantic models and httpx), more than
a whole `notes search` may take from a cold start. The daemon, `lorebot chat` and `notes
reembed`, which embed many texts and keep their connection, use it
(`bot.model.ollama.OllamaEmbedder`); failures read the same either way
(`bot.model.errors`).
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from bot.model.errors import (
    ModelUnavailable,
    no_embeddings,
    refused,
    unreachable,
    unreadable,
)
from memory.embedder import model_name
from memory.errors import EmbedderUnavailable, StoreError


class QuickEmbedder:
    """lorebot's `Embedder` for a process that embeds one query and exits. Each call is
    one connection; `timeout_s` bounds connecting and each read of the answer."""

    def __init__(
        self,
        host: str,
        model: str,
        *,
        timeout_s: float,
        backend: str = "ollama",
        api_key: str | None = None,
    ) -> None:
        self._host = host
        self._openai = backend == "openai"
        # Ollama's full name (`:latest` added), or the name as an OpenAI server gives it.
        self._model = model if self._openai else model_name(model)
        self._timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json"}
        self._secrets = (api_key,) if api_key else ()  # what a server may quote back
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    @property
    def model(self) -> str:
        """The model's full name, as recorded with its vectors."""
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text; `EmbedderUnavailable` when Ollama cannot give them."""
        if not texts:
            return []
        try:
            vectors = await asyncio.to_thread(self._post, list(texts))
        except ModelUnavailable as exc:
            raise EmbedderUnavailable(no_embeddings(self._model, exc)) from exc
        if len(vectors) != len(texts):
            raise StoreError(f"Ollama returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def _post(self, texts: list[str]) -> list[list[float]]:
        """The vectors of `texts`, asked for over a connection of its own."""
        parts = urlsplit(self._host)
        https = parts.scheme == "https"
        connection_class = http.client.HTTPSConnection if https else http.client.HTTPConnection
        connection = connection_class(
            parts.hostname or "127.0.0.1", parts.port, timeout=self._timeout_s
        )
        try:
            try:
                connection.connect()
            except TimeoutError:
                raise self._no_answer() from None
            except OSError as exc:  # refused, no such host, no route
                raise unreachable(self._host, "cannot connect") from exc
            body = json.dumps({"model": self._model, "input": texts})
            path = f"{parts.path}/embeddings" if self._openai else f"{parts.path}/api/embed"
            try:
                connection.request("POST", path, body, self._headers)
                response = connection.getresponse()
                data = response.read()
            except TimeoutError:
                raise self._no_answer() from None
            except (OSError, http.client.HTTPException) as exc:
                why = f"the connection broke: {type(exc).__name__}"
                raise unreachable(self._host, why) from exc
        finally:
            connection.close()
        if response.status != 200:
            error = _error_text(data)
            raise refused(
                response.status, error, host=self._host, model=self._model, secrets=self._secrets
            )
        try:
            return openai_vectors(json.loads(data)) if self._openai else _vectors(data)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise unreadable(self._model, exc) from exc

    def _no_answer(self) -> ModelUnavailable:
        return unreachable(self._host, f"no answer within {self._timeout_s:g} s")


def _error_text(data: bytes) -> str:
    """Ollama's `{"error": "..."}` (an OpenAI server's `{"error": {"message": ...}}`), or
    the start of whatever else the answer held."""
    text = data.decode("utf-8", "replace")
    try:
        error = json.loads(text)["error"]
        return str(error["message"] if isinstance(error, dict) else error)
    except (ValueError, KeyError, TypeError, RecursionError):
        return text[:200]


def pooled(embedding: Any) -> Any:
    """One vector for a text: the mean of its token vectors when a server gives one per
    token (llama.cpp does for a model without a pooling layer), else the vector as it is."""
    if isinstance(embedding, list) and embedding and all(isinstance(t, list) for t in embedding):
        width = len(embedding[0])
        if width == 0 or any(len(token) != width for token in embedding):
            raise TypeError("token vectors of different lengths")
        return [sum(column) / len(embedding) for column in zip(*embedding, strict=True)]
    return embedding


def openai_vectors(answer: Any) -> list[list[float]]:
    """The vectors of an OpenAI `/embeddings` answer (its JSON), in the order of their
    `index`; `KeyError` or `TypeError` for an answer of another shape."""
    found = answer["data"]
    if not isinstance(found, list):
        raise TypeError("data is not a list")
    ordered = sorted(found, key=lambda item: item["index"])
    return _numbers([pooled(item["embedding"]) for item in ordered])


def _vectors(data: bytes) -> list[list[float]]:
    """The `embeddings` of an `/api/embed` answer, each a list of numbers."""
    return _numbers(json.loads(data)["embeddings"])


def _numbers(found: object) -> list[list[float]]:
    if not isinstance(found, list):
        raise TypeError("embeddings is not a list")
    vectors = []
    for vector in found:
        if not isinstance(vector, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in vector
        ):
            raise TypeError("a vector is not a list of numbers")
        vectors.append([float(x) for x in vector])
    return vectors
