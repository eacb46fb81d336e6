"""Strict schemas for the model's tool arguments, and the coercions small models need.

Local models often wrap strings in extra quotes, send the arguments object as a JSON
string, or write numbers as strings. Those are repaired here, before validation; whatever
still fails goes back to the model as an error it can correct.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class MemoryReadArgs(_Args):
    topic: str = Field(description="the topic slug from an index, e.g. staging-db")


class MemorySearchArgs(_Args):
    query: str = Field(description="words to search the notes for")
    limit: int = Field(5, ge=1, le=20, description="how many notes to return")


class ProposeNoteArgs(_Args):
    topic: str = Field(description="lowercase kebab-case slug, e.g. staging-db")
    summary: str = Field(description="one line shown in the index")
    body: str = Field("", description="the details")
    scope: Literal["channel", "user"] = Field(
        "channel", description="channel: for this conversation; user: about the person"
    )


class ProposeForgetArgs(_Args):
    topic: str = Field(description="the topic slug of the note to forget")


class LoadSkillArgs(_Args):
    name: str = Field(description="the skill's name from the skill catalog")


class ReadSkillResourceArgs(_Args):
    skill: str = Field(description="the skill's name")
    path: str = Field(description="a file under the skill's references/ or assets/")


class ProposeSkillArgs(_Args):
    name: str = Field(description="lowercase letters, digits and hyphens, e.g. incident-triage")
    description: str = Field(description="what the skill does, then 'Use when …'")
    body: str = Field(description="the Markdown instructions")


TOOL_ARGS: dict[str, tuple[type[_Args], str]] = {
    "memory_read": (MemoryReadArgs, "Read the full note of a topic listed in a memory index."),
    "memory_search": (
        MemorySearchArgs,
        "Search the notes and past messages this conversation may read.",
    ),
    "propose_note": (
        ProposeNoteArgs,
        "Propose saving a note; the person approves it on a card before it is saved.",
    ),
    "propose_forget": (
        ProposeForgetArgs,
        "Propose forgetting a note; the person approves it on a card first.",
    ),
    "load_skill": (
        LoadSkillArgs,
        "Load a skill's full instructions from the skill catalog (the person may be asked).",
    ),
    "read_skill_resource": (
        ReadSkillResourceArgs,
        "Read a text file from a loaded skill's references/ or assets/ folder.",
    ),
    "propose_skill": (
        ProposeSkillArgs,
        "Propose a new skill; the person sees the whole SKILL.md and approves it first.",
    ),
}
WRITE_TOOLS = frozenset({"propose_note", "propose_forget", "propose_skill"})
SKILL_TOOLS = frozenset({"load_skill", "read_skill_resource"})
# Tools that show a person a card, counted against the cards of one turn.
PROPOSAL_TOOLS = frozenset({"propose_note", "propose_forget", "propose_skill", "load_skill"})
# No tool takes nested arguments; deeper JSON is refused before anything recurses into it.
MAX_ARGUMENT_DEPTH = 32
TOO_DEEP = f"arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep"


@functools.cache
def tool_specs(*, read_only: bool, skills: bool = False) -> tuple[dict[str, Any], ...]:
    """Ollama tool definitions; read-only conversations get no proposing tools, and the
    skill tools appear only when there are skills to load. Built once: treat as read-only."""
    specs = []
    for name, (model, description) in sorted(TOOL_ARGS.items()):
        if (read_only and name in WRITE_TOOLS) or (not skills and name in SKILL_TOOLS):
            continue
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        specs.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": schema},
            }
        )
    return tuple(specs)


class ToolArgumentError(ValueError):
    """Arguments the model must correct; the message is written for the model."""


def _unquote(value: Any) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        while len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'`":
            stripped = stripped[1:-1].strip()
        return stripped
    return value


def exceeds_depth(value: Any, limit: int) -> bool:
    """Whether lists and objects in `value` nest more than `limit` levels; iterative, so any
    depth is measured without recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


def _checked(key: str, value: Any) -> Any:
    if "\x00" in key or (isinstance(value, str) and "\x00" in value):
        raise ToolArgumentError(f"argument {key!r} contains a NUL character; send plain text")
    return value


def _decode(text: str) -> Any:
    """Arguments the model sent as a JSON string."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ToolArgumentError(TOO_DEEP) from None


def coerce_arguments(raw: Any) -> dict[str, Any]:
    """Repair the known quirks: a JSON string instead of an object, and quote-wrapped
    strings. Numbers given as strings are accepted by pydantic's lax mode. NUL characters
    and deep nesting are refused: no tool takes them, and paths and C libraries fail on them."""
    if isinstance(raw, str):
        raw = _decode(raw)
    if exceeds_depth(raw, MAX_ARGUMENT_DEPTH):
        raise ToolArgumentError(TOO_DEEP)
    if not isinstance(raw, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    return {str(key): _checked(str(key), _unquote(value)) for key, value in raw.items()}


def parse_arguments(name: str, raw: Any) -> _Args:
    """Validate a tool call's arguments against the tool's schema."""
    model, _ = TOOL_ARGS[name]
    try:
        return model.model_validate(coerce_arguments(raw))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise ToolArgumentError(f"invalid arguments for {name}: {problems}") from None
