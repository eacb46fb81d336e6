"""The shapes of the OpenAI chat-completions API beside Ollama's, which the model client
reads: messages going out (tool calls with ids and JSON-string arguments, tool results
naming the call they answer), and completions coming back, whole or in streamed chunks
(a call's arguments in pieces, reasoning as `reasoning_content`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.model.arguments import read_json, valid_text
from bot.model.ollama import IncompleteStream


def openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Ollama-shaped messages as the chat-completions API takes them: each tool call with
    an id and its arguments as a JSON string, each tool result naming the call it answers
    (results follow their calls in order, as the agent appends them)."""
    converted: list[dict[str, Any]] = []
    waiting: list[str] = []  # ids of the latest assistant calls not answered yet
    for number, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            calls: list[dict[str, Any]] = []
            for index, call in enumerate(message["tool_calls"]):
                function = call.get("function", {})
                arguments = function.get("arguments", {})
                calls.append({
                    "id": f"call_{number}_{index}",
                    "type": "function",
                    "function": {
                        "name": function.get("name", ""),
                        "arguments": arguments if isinstance(arguments, str)
                        else json.dumps(arguments, ensure_ascii=False),
                    },
                })  # fmt: skip
            waiting = [call["id"] for call in calls]
            # "" rather than null: some servers (llama.cpp's) take only a string here.
            converted.append({"role": "assistant", "content": message.get("content") or "",
                              "tool_calls": calls})  # fmt: skip
        elif role == "tool":
            call_id = waiting.pop(0) if waiting else f"call_{number}"
            converted.append({"role": "tool", "tool_call_id": call_id,
                              "content": str(message.get("content", ""))})  # fmt: skip
        else:
            converted.append({"role": role, "content": message.get("content", "")})
    return converted


def completion_request(
    request: Mapping[str, Any],
    *,
    schema_style: str = "json_schema",
    reasoning_effort: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for an Ollama-shaped request. A
    JSON schema goes as the API's `json_schema` response format, or as `json_object` with
    a `schema` for servers that take only that (llama.cpp's)."""
    kwargs: dict[str, Any] = {
        "model": request["model"],
        "messages": openai_messages(request["messages"]),
    }
    if request.get("tools"):
        kwargs["tools"] = [{"type": "function", **tool} if "function" in tool else tool
                           for tool in request["tools"]]  # fmt: skip
    if reasoning_effort is not None:
        kwargs["reasoning_effort"] = reasoning_effort
    if (options := request.get("options")) and options.get("num_predict"):
        kwargs["max_tokens"] = options["num_predict"]
    if request.get("format"):
        schema = dict(request["format"])
        kwargs["response_format"] = (
            {"type": "json_object", "schema": schema} if schema_style == "json_object"
            else {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        )  # fmt: skip
    return kwargs


def _count(table: Any, key: str) -> int | None:
    """A positive whole number at `key` of a JSON object, else None."""
    value = table.get(key) if isinstance(table, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def reported_context(entry: Mapping[str, Any], props: Any = None) -> tuple[int, str] | None:
    """The context length a server gives for its model, and where it gave it: llama.cpp's
    `/props` (its `n_ctx`, what one request may use), vLLM's `max_model_len` or another's
    `context_length` in the model's `/v1/models` entry, else the context the model was
    trained for, from llama.cpp's `meta` there (the server may run with less)."""
    entry = dict(entry)
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    found = [
        (_count(settings, "n_ctx"), "the server's /props n_ctx"),
        (_count(entry, "max_model_len"), "the server's max_model_len in /v1/models"),
        (_count(entry, "context_length"), "the server's context_length in /v1/models"),
        (
            _count(entry.get("meta"), "n_ctx_train"),
            "the model's n_ctx_train in /v1/models: the server may run with less",
        ),
    ]
    return next(((count, source) for count, source in found if count), None)


def _arguments(text: str | None) -> Any:
    """A call's arguments: the decoded JSON string, or the string itself when it is not
    JSON (the agent then tells the model what was wrong)."""
    if not text:
        return {}
    try:
        return read_json(text)
    except (ValueError, RecursionError):
        return text


def _reasoning(part: Any) -> str:
    """The reasoning text a server sends beside the answer (`reasoning_content`, or
    `reasoning` on some), kept by the SDK as an extra field."""
    extra = getattr(part, "model_extra", None) or {}
    text = extra.get("reasoning_content") or extra.get("reasoning")
    return valid_text(text) if isinstance(text, str) else ""


def ollama_body(completion: Any) -> dict[str, Any]:
    """A chat completion as the body of Ollama's `/api/chat`, which the model client reads."""
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice is not None else None
    body_message: dict[str, Any] = {
        "role": "assistant",
        "content": valid_text(message.content or "") if message is not None else "",
    }
    if message is not None:
        if thinking := _reasoning(message):
            body_message["thinking"] = thinking
        if message.tool_calls:
            body_message["tool_calls"] = [
                {"function": {"name": call.function.name,
                              "arguments": _arguments(call.function.arguments)}}
                for call in message.tool_calls if getattr(call, "function", None)
            ]  # fmt: skip
    return {**_usage(completion), "message": body_message, "done": True}


def _usage(completion: Any) -> dict[str, Any]:
    usage = getattr(completion, "usage", None)
    if usage is None:
        return {}
    return {"prompt_eval_count": usage.prompt_tokens, "eval_count": usage.completion_tokens}


class StreamedCompletion:
    """The chunks of a streamed completion joined into the body a non-streaming call gives:
    content and reasoning concatenated, each tool call's pieces put together by index."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._thinking: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}
        self._finished = False
        self._usage: dict[str, Any] = {}
        self.chunks = 0

    def add(self, chunk: Any) -> str:
        """Take one chunk; return its piece of content ("" when it has none)."""
        self.chunks += 1
        self._usage = _usage(chunk) or self._usage
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        if choice.finish_reason is not None:
            self._finished = True
        delta = choice.delta
        if delta is None:
            return ""
        if thinking := _reasoning(delta):
            self._thinking.append(thinking)
        for call in delta.tool_calls or ():
            part = self._calls.setdefault(call.index, {"name": "", "arguments": ""})
            if call.function is not None:
                # The name comes whole in the first piece; some servers (llama.cpp) repeat
                # it in every piece, which must not be added again.
                name = call.function.name or ""
                if name != part["name"]:
                    part["name"] += name
                part["arguments"] += call.function.arguments or ""
        content = valid_text(delta.content or "")
        if content:
            self._content.append(content)
        return content

    def body(self) -> dict[str, Any]:
        """The whole answer; `IncompleteStream` when it ended before its finish reason."""
        if not self._finished:
            raise IncompleteStream("the answer ended before its last chunk")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content)}
        if self._thinking:
            message["thinking"] = "".join(self._thinking)
        if self._calls:
            message["tool_calls"] = [
                {"function": {"name": part["name"], "arguments": _arguments(part["arguments"])}}
                for _, part in sorted(self._calls.items())
            ]
        return {**self._usage, "message": message, "done": True}
