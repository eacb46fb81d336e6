"""What a failed call to Ollama means to lorebot, with no HTTP client loaded: the ollama
client (`bot.model.ollama`) and the one-shot embedder (`bot.model.quick_embed`) say the same
things about the same failures."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from bot.errors import LorebotError
from bot.model.arguments import valid_text
from memory.policy.redaction import redact

UNREACHABLE_FIX = (
    "start Ollama (`ollama serve`), or set ollama.host (LOREBOT_OLLAMA__HOST, or OLLAMA_HOST) "
    "to where it runs; lorebot still answers from memory without it"
)

Kind = Literal["unreachable", "missing", "failing", "refused", "unreadable", "too_long", "empty"]
# What says the server or the model is out of order, rather than one request or reply bad.
BACKS_OFF: frozenset[Kind] = frozenset({"unreachable", "missing", "failing"})


class UnreadableReply(ValueError):
    """An answer that is not in the shape of the server's API (an object where a list
    belongs, a number where text does); the message says what, never what the server sent."""


def server_text(text: str, secrets: Iterable[str]) -> str:
    """What a server said, fit to show and log: valid text, with credentials and every one
    of `secrets` redacted (some servers quote back the API key they refused)."""
    return redact(valid_text(text), secrets)


class ModelUnavailable(LorebotError):
    """The model cannot answer now: `kind` says why (unreachable, missing, failing,
    refused, unreadable, too_long: the prompt does not fit the model's context, or empty:
    it answered nothing, twice) and `fix` what an operator can do about it."""

    def __init__(self, detail: str, *, kind: Kind = "unreachable", fix: str = "") -> None:
        super().__init__(detail)
        self.kind: Kind = kind
        self.fix = fix

    @property
    def backs_off(self) -> bool:
        """Whether asking again at once would only fail again."""
        return self.kind in BACKS_OFF


def refused(
    status: int,
    error: str,
    *,
    host: str,
    model: str,
    server: str = "Ollama",
    secrets: Iterable[str] = (),
) -> ModelUnavailable:
    """An answer with HTTP status `status` and the server's `error` text, `secrets` redacted."""
    error = server_text(error, secrets)
    if status == 404:
        return ModelUnavailable(
            f"{model} is not installed at {host}", kind="missing", fix=f"ollama pull {model}"
        )
    if status >= 500 or status < 0:
        return ModelUnavailable(f"{server} at {host} failed: {error}", kind="failing")
    return ModelUnavailable(f"{server} refused the request ({status}): {error}", kind="refused")


def unreachable(host: str, why: str, *, fix: str = UNREACHABLE_FIX) -> ModelUnavailable:
    """No answer at all: `why` says what happened to the connection; `fix` is Ollama's
    unless the server is another."""
    return ModelUnavailable(f"unreachable at {host} ({why})", fix=fix)


def unreadable(model: str, exc: BaseException) -> ModelUnavailable:
    """An answer that could not be read."""
    if isinstance(exc, RecursionError):
        why = "a reply nested too deeply to read"
    elif isinstance(exc, UnreadableReply):
        why = f"an unreadable reply ({exc})"
    else:  # not JSON, not UTF-8, a body the client cannot decode, or one of the wrong shape
        why = f"an unreadable reply ({type(exc).__name__})"
    return ModelUnavailable(f"{model} sent {why}", kind="unreadable")


def no_embeddings(model: str, exc: ModelUnavailable) -> str:
    """What an embedder says when `model` gave no vectors, with the fix for a missing one."""
    fix = f": run `{exc.fix}`" if exc.kind == "missing" else ""
    return f"no embeddings from {model}: {exc}{fix}"
