"""Where the model runs: `[model]` picks the backend, `[ollama]` and `[openai]` say where
each server is and what it serves. Whichever backend is picked, `Settings.model_server`
is its section, read the same way by the model client, the embedders and `doctor`."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, SecretStr, field_validator

from bot.config.sections import Section


class ModelSettings(Section):
    backend: Literal["ollama", "openai"] = Field(
        "ollama",
        description="ollama, or openai: any server of the OpenAI chat-completions API "
        "(vLLM, llama.cpp, LM Studio, LocalAI, LiteLLM), set up in [openai]",
    )


def _default_ollama_host() -> str:
    """Ollama's own `OLLAMA_HOST`, as the `ollama` command reads it, else the local server."""
    return os.environ.get("OLLAMA_HOST", "").strip() or "http://127.0.0.1:11434"


def ollama_url(host: str) -> str:
    """A host as Ollama reads it (`0.0.0.0`, `name:port` or a URL) as the URL to call:
    http, and port 11434, unless given."""
    from urllib.parse import urlsplit

    scheme, given, rest = host.strip().partition("://")
    if not given:
        scheme, rest = "http", host.strip()
    if scheme not in ("http", "https"):
        raise ValueError(f"{host!r} is not an http:// or https:// URL")
    parts = urlsplit(f"{scheme}://{rest}")
    port = parts.port or (443 if scheme == "https" else 80 if given else 11434)
    name = parts.hostname or "127.0.0.1"
    name = f"[{name}]" if ":" in name else name
    return f"{scheme}://{name}:{port}{parts.path.rstrip('/')}"


class OllamaSettings(Section):
    host: str = Field(
        default_factory=_default_ollama_host,
        validate_default=True,
        description="where Ollama listens; default: $OLLAMA_HOST, else http://127.0.0.1:11434",
    )
    model: str = Field("qwen3:8b", description="the chat model, as `ollama list` names it")
    timeout_s: float = Field(120.0, gt=0, description="how long one model answer may take")
    probe_timeout_s: float = Field(
        5.0, gt=0, description="how long asking Ollama about the model (and connecting) may take"
    )
    reasoning_effort: str | None = Field(
        None, pattern="^(low|medium|high|none)$", description="low, medium, high or none"
    )
    show_thinking: bool = Field(False, description="show the model's thinking above replies")
    embed_model: str | None = Field(
        None, description="an embedding model for recall by meaning; unset: by words alone"
    )

    @field_validator("host")
    @classmethod
    def _url(cls, host: str) -> str:
        return ollama_url(host)

    @property
    def url(self) -> str:
        """Where the server is, as health and `doctor` name it."""
        return self.host

    @property
    def backend(self) -> str:
        return "ollama"


def _default_openai_url() -> str:
    """The `openai` package's own `OPENAI_BASE_URL`, else a server on this machine."""
    return os.environ.get("OPENAI_BASE_URL", "").strip() or "http://127.0.0.1:8000/v1"


def _default_openai_key() -> SecretStr | None:
    """The `openai` package's own `OPENAI_API_KEY`, when set."""
    key = os.environ.get("OPENAI_API_KEY", "").strip()
    return SecretStr(key) if key else None


class OpenAISettings(Section):
    """A server of the OpenAI chat-completions API, used when `model.backend = "openai"`."""

    base_url: str = Field(
        default_factory=_default_openai_url,
        validate_default=True,
        description="the API's root, with its /v1; default: $OPENAI_BASE_URL, else "
        "http://127.0.0.1:8000/v1",
    )
    api_key: SecretStr | None = Field(
        default_factory=_default_openai_key,
        description="the server's API key, if it wants one; default: $OPENAI_API_KEY",
    )
    model: str = Field("", description="the chat model, as the server's /v1/models names it")
    embed_model: str | None = Field(
        None, description="an embedding model for recall by meaning; unset: by words alone"
    )
    context_tokens: int | None = Field(
        None, ge=256, description="the model's context length, for servers that do not say it"
    )
    timeout_s: float = Field(120.0, gt=0, description="how long one model answer may take")
    probe_timeout_s: float = Field(
        5.0, gt=0, description="how long asking the server about the model may take"
    )
    reasoning_effort: str | None = Field(
        None, pattern="^(low|medium|high|none)$", description="low, medium, high or none"
    )
    show_thinking: bool = Field(False, description="show the model's reasoning above replies")

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str) -> str:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        return url

    @property
    def url(self) -> str:
        """Where the server is, as health and `doctor` name it."""
        return self.base_url

    @property
    def backend(self) -> str:
        return "openai"

    def key(self) -> str | None:
        """The API key's value, or None when none is set."""
        return self.api_key.get_secret_value() if self.api_key else None
