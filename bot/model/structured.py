"""Structured output: ask the model for JSON matching a pydantic model, with one retry."""

from __future__ import annotations

import json
import logging
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from bot.errors import LorebotError
from bot.model.client import Model

_log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

# What a structured answer may cost: every schema lorebot asks for fits well within it,
# and a small model looping inside a JSON grammar stops there instead of filling its
# context (minutes on a CPU).
MAX_ANSWER_TOKENS = 1024


class InvalidModelOutput(LorebotError):
    """The model kept answering something that does not fit the schema."""


async def ask_structured(model: Model, prompt: str, schema: type[T], *, attempts: int = 2) -> T:
    """The model's answer to `prompt` as a `schema` instance, through Ollama's `format`.

    Raises ModelUnavailable when the model cannot be reached and InvalidModelOutput when
    every attempt was invalid."""
    problem = ""
    for _ in range(attempts):
        result = await model.chat(
            [{"role": "user", "content": prompt}],
            format=schema.model_json_schema(),
            max_tokens=MAX_ANSWER_TOKENS,
        )
        try:
            # A raw newline or tab inside a string is taken as written (`strict=False`):
            # small models write them, and llama.cpp's JSON grammar lets them through.
            return schema.model_validate(json.loads(result.content, strict=False))
        except json.JSONDecodeError as exc:
            problem = f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            _log.info("model output did not fit %s (%s)", schema.__name__, problem)
        except ValidationError as exc:
            problem = f"{exc.error_count()} problems, first: {exc.errors()[0]['msg']}"
            _log.info("model output did not fit %s (%s)", schema.__name__, problem)
    raise InvalidModelOutput(f"the model's answer did not fit {schema.__name__}: {problem}")
