"""The shapes of the OpenAI chat-completions API beside Ollama's, which the model client
reads: messages going out (tool calls with ids and JSON-string arguments, tool results
naming the call they answer), and completions coming back, whole or in streamed chunks
(a call's arguments in pieces, reasoning as `reasoning_content`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.model.arguments import read_json, valid_text
from bot.model.errors import UnreadableReply
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
                calls.append(
                    {
                        "id": f"call_{number}_{index}",
                        "type": "function",
                        "function": {
                            "name": function.get("name", ""),
                            "arguments": arguments
                            if isinstance(arguments, str)
                            else json.dumps(arguments, ensure_ascii=False),
                        },
                    }
                )
            waiting = [call["id"] for call in calls]
            # "" rather than null: some servers (llama.cpp's) take only a string here.
            converted.append(
                {"role": "assistant", "content": message.get("content") or "", "tool_calls": calls}
            )
        elif role == "tool":
            call_id = waiting.pop(0) if waiting else f"call_{number}"
            converted.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": str(message.get("content", "")),
                }
            )
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
        kwargs["tools"] = [
            {"type": "function", **tool} if "function" in tool else tool
            for tool in request["tools"]
        ]
    if reasoning_effort is not None:
        kwargs["reasoning_effort"] = reasoning_effort
    if (options := request.get("options")) and options.get("num_predict"):
        kwargs["max_tokens"] = options["num_predict"]
    if request.get("format"):
        schema = dict(request["format"])
        kwargs["response_format"] = (
            {"type": "json_object", "schema": schema}
            if schema_style == "json_object"
            else {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        )
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


_KINDS = {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}


def _kind(value: Any) -> str:
    """What a JSON value is, as an error names it."""
    return _KINDS.get(type(value), type(value).__name__)


def _object(value: Any, what: str) -> dict[str, Any]:
    """A JSON object of the answer ({} for null); `UnreadableReply` for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UnreadableReply(f"{what} is {_kind(value)}, not an object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    """A JSON list of the answer ([] for null); `UnreadableReply` for anything else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise UnreadableReply(f"{what} is {_kind(value)}, not a list")
    return value


def _text(value: Any, what: str) -> str:
    """Text of the answer, made valid ("" for null); `UnreadableReply` for anything else."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UnreadableReply(f"{what} is {_kind(value)}, not text")
    return valid_text(value)


def _reasoning(part: dict[str, Any]) -> str:
    """The reasoning text a server sends beside the answer: `reasoning_content`, or
    `reasoning` on some; an extra of theirs, so anything but text is left out."""
    text = part.get("reasoning_content") or part.get("reasoning")
    return valid_text(text) if isinstance(text, str) else ""


def _usage(body: dict[str, Any]) -> dict[str, Any]:
    """The token counts of the answer's `usage` by Ollama's names, those that are counts."""
    names = {"prompt_eval_count": "prompt_tokens", "eval_count": "completion_tokens"}
    counts = {key: _count(body.get("usage"), name) for key, name in names.items()}
    return {key: count for key, count in counts.items() if count is not None}


def decoded(answer: Any) -> Any:
    """An answer's JSON: the SDK gives one sent without a JSON content type as its text."""
    return read_json(answer) if isinstance(answer, str) else answer


def served_models(listing: Any) -> dict[str, dict[str, Any]]:
    """The entries of a `/v1/models` answer by model id; `UnreadableReply` when it is not
    in the API's shape."""
    entries = _list(_object(decoded(listing), "the model list").get("data"), "the models")
    found = [_object(entry, "a model's entry") for entry in entries]
    return {_text(entry.get("id"), "a model's id"): entry for entry in found}


def _arguments(pieces: Sequence[Any]) -> Any:
    """A call's arguments from its pieces: the JSON text they make, decoded (the text
    itself when it is not JSON: the agent then tells the model what was wrong). Arguments
    sent as a JSON value rather than as its text (some servers and proxies do) are taken as
    that value."""
    given = [piece for piece in pieces if piece is not None and piece != ""]
    if all(isinstance(piece, str) for piece in given):
        text = "".join(given)
        try:
            return read_json(text) if text else {}
        except (ValueError, RecursionError):
            return text
    if len(given) == 1:
        return given[0]
    raise UnreadableReply("a call's arguments came as pieces that are not all text")


def _call(name: str, arguments: Sequence[Any]) -> dict[str, Any]:
    return {"function": {"name": name, "arguments": _arguments(arguments)}}


def ollama_body(completion: Any) -> dict[str, Any]:
    """A chat completion's JSON, read as untrusted data, as the body of Ollama's
    `/api/chat`, which the model client reads; `UnreadableReply` when it is not in the
    API's shape."""
    body = _object(decoded(completion), "the answer")
    choices = _list(body.get("choices"), "choices")
    choice = _object(choices[0], "a choice") if choices else {}
    message = _object(choice.get("message"), "the message")
    reply: dict[str, Any] = {
        "role": "assistant",
        "content": _text(message.get("content"), "the content"),
    }
    if thinking := _reasoning(message):
        reply["thinking"] = thinking
    calls = []
    for call in _list(message.get("tool_calls"), "tool_calls"):
        function = _object(_object(call, "a tool call").get("function"), "a call's function")
        name = _text(function.get("name"), "a function name")
        calls.append(_call(name, [function.get("arguments")]))
    if calls:
        reply["tool_calls"] = calls
    return {**_usage(body), "message": reply, "done": True}


class StreamedCompletion:
    """The chunks of a streamed completion, read as untrusted data and joined into the body
    a non-streaming call gives: content and reasoning concatenated, each tool call's pieces
    put together by index. `add` raises `UnreadableReply` for a chunk not in the API's shape."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._thinking: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._latest = -1  # the index of the call the last piece belonged to
        self._finished = False
        self._usage: dict[str, Any] = {}
        self.chunks = 0

    def add(self, chunk: Any) -> str:
        """Take one chunk; return its piece of content ("" when it has none)."""
        self.chunks += 1
        chunk = _object(chunk, "a chunk")
        self._usage = _usage(chunk) or self._usage
        choices = _list(chunk.get("choices"), "choices")
        if not choices:
            return ""
        choice = _object(choices[0], "a choice")
        if choice.get("finish_reason") is not None:
            self._finished = True
        delta = _object(choice.get("delta"), "a delta")
        if thinking := _reasoning(delta):
            self._thinking.append(thinking)
        for call in _list(delta.get("tool_calls"), "tool_calls"):
            self._add_call(_object(call, "a tool call"))
        content = _text(delta.get("content"), "the content")
        if content:
            self._content.append(content)
        return content

    def _add_call(self, piece: dict[str, Any]) -> None:
        """One piece of a tool call, joined to the call its index names. Some servers
        number only a call's first piece: one without an index belongs to the latest call,
        unless it names another call's id."""
        index = piece.get("index")
        if not isinstance(index, int):
            latest = self._calls.get(self._latest)
            same = latest is not None and piece.get("id") in (None, latest["id"])
            index = self._latest if same else max(self._calls, default=-1) + 1
        part = self._calls.setdefault(index, {"id": piece.get("id"), "name": "", "arguments": []})
        self._latest = index
        function = _object(piece.get("function"), "a call's function")
        # The name comes whole in the first piece; some servers (llama.cpp) repeat it in
        # every piece, which must not be added again.
        name = _text(function.get("name"), "a function name")
        if name != part["name"]:
            part["name"] += name
        part["arguments"].append(function.get("arguments"))

    def body(self) -> dict[str, Any]:
        """The whole answer; `IncompleteStream` when it ended before its finish reason."""
        if not self._finished:
            raise IncompleteStream("the answer ended before its last chunk")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content)}
        if self._thinking:
            message["thinking"] = "".join(self._thinking)
        if self._calls:
            message["tool_calls"] = [
                _call(part["name"], part["arguments"]) for _, part in sorted(self._calls.items())
            ]
        return {**self._usage, "message": message, "done": True}
