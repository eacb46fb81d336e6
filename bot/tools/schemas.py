"""JSON Schemas of operator tools: a flat form the model can read, and validation against
the original.

The ollama client keeps only `type`, `items`, `description` and `enum` of each parameter
(an optional parameter's `anyOf` becomes `{}`; `default`, `minimum` and the like vanish),
so the model is shown types and enums with the rest said in words, and its arguments are
checked against the server's own schema before anything else happens.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import exceptions as schema_errors
from jsonschema import validators

from bot.model.arguments import ToolArgumentError

_SAID = (
    ("minimum", "at least {}"),
    ("maximum", "at most {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("pattern", "matching {}"),
    ("format", "format {}"),
)
_TYPES = ("string", "integer", "number", "boolean", "array", "object")


def flatten(schema: dict[str, Any]) -> dict[str, Any]:
    """The parameters object the model sees."""
    properties = schema.get("properties") or {}
    return {
        "type": "object",
        "properties": {str(k): _flat(v) for k, v in properties.items() if isinstance(v, dict)},
        "required": [str(r) for r in schema.get("required") or []],
    }


def _flat(prop: dict[str, Any]) -> dict[str, Any]:
    options = [o for o in prop.get("anyOf") or prop.get("oneOf") or [] if isinstance(o, dict)]
    nullable = any(o.get("type") == "null" for o in options)
    chosen = next((o for o in options if o.get("type") != "null"), {})
    merged = {**chosen, **{k: v for k, v in prop.items() if k not in ("anyOf", "oneOf")}}
    kind = merged.get("type")
    if isinstance(kind, list):
        nullable = nullable or "null" in kind
        kind = next((k for k in kind if k != "null"), "string")
    flat: dict[str, Any] = {"type": kind if kind in _TYPES else "string"}
    notes = [merged.get("description") or merged.get("title") or ""]
    notes += [said.format(merged[key]) for key, said in _SAID if key in merged]
    if "default" in merged:
        notes.append(f"default {json.dumps(merged['default'])}")
    if nullable:
        notes.append("may be null")
    description = "; ".join(n for n in notes if n)
    if description:
        flat["description"] = description
    if isinstance(merged.get("enum"), list):
        flat["enum"] = merged["enum"]
    if flat["type"] == "array" and isinstance(merged.get("items"), dict):
        flat["items"] = _flat(merged["items"])
    return flat


def validate(schema: dict[str, Any], arguments: dict[str, Any], tool: str) -> None:
    """Raise `ToolArgumentError` with every problem when `arguments` do not fit `schema`."""
    try:
        validator_class = validators.validator_for(schema)
        validator = validator_class(schema)
        problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    except (schema_errors.SchemaError, schema_errors.UnknownType, TypeError) as exc:
        raise ToolArgumentError(f"the server's schema for {tool} is broken: {exc}") from None
    if problems:
        said = "; ".join(
            f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in problems[:5]
        )
        raise ToolArgumentError(f"invalid arguments for {tool}: {said}")
