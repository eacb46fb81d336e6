"""A small fake of an OpenAI-compatible server on 127.0.0.1 that the real `openai` client
talks to, recording what it is sent. It plays the parts of real servers that tests need:

    fake = FakeOpenAI(model="qwen3", owned_by="llamacpp")
    fake.entry["meta"] = {"n_ctx_train": 32768}      # more of the model's /v1/models entry
    fake.props = {"default_generation_settings": {"n_ctx": 4096}}  # llama.cpp's /props
    fake.refused_styles = {"json_schema"}            # response formats answered with a 500,
                                                     # as llama.cpp's server answers
    fake.answer = '{"summary": "deploys run on Tuesdays"}'  # each chat completion's content
    fake.answers.append({"choices": "none"})         # the next completion, any JSON as sent;
    fake.answers.append([chunk, chunk])              # to a streamed request, its chunks
    fake.answers.append(web.Response(text="{...}"))  # or a whole response, as it is
    fake.listing = {"data": "none"}                  # /v1/models' whole answer, as sent
    fake.embeddings = {"data": 5}                    # /v1/embeddings' answer, as sent
    fake.key = "the-right-key"                       # any other key gets OpenAI's 401,
                                                     # which quotes the key it was given

A request with `stream: true` gets server-sent events: each chunk of its queued answer (any
JSON, as given), then `[DONE]`; with none queued, `fake.answer` in one chunk and a finish.
`fake.requests` holds each request's path and JSON body, in order. Start one with
`async with serving(FakeOpenAI(...)) as fake:`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FakeOpenAI", "serving"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class FakeOpenAI:
    """A fake OpenAI-compatible server serving one model."""

    model: str = "qwen3"
    owned_by: str = "llamacpp"
    entry: dict[str, Any] = field(default_factory=dict)
    props: dict[str, Any] | None = None  # None: /props is a 404, as on most servers
    refused_styles: set[str] = field(default_factory=set)
    answer: str = '{"summary": "deploys run on Tuesdays"}'
    answers: list[Any] = field(default_factory=list)  # the next completions, as sent
    listing: Any = None  # None: a list of `model`, with `entry`
    embeddings: Any = None  # None: the vector [1.0, 0.0] for each text
    key: str | None = None  # None: any key (or none) is taken
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def url(self) -> str:
        """The base URL, with its /v1, as `openai.base_url` takes it."""
        return f"http://127.0.0.1:{self.port}/v1"

    def chat_styles(self) -> list[str]:
        """The response format type of each chat request, in order."""
        return [
            body.get("response_format", {}).get("type", "")
            for path, body in self.requests
            if path == "/v1/chat/completions"
        ]

    async def start(self) -> FakeOpenAI:
        app = web.Application(middlewares=[self._check_key])
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/props", self._props)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _check_key(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """OpenAI's 401 for a wrong key, which quotes the key it was given."""
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.key is None or given == self.key:
            return await handler(request)
        self.requests.append((request.path, {}))
        message = (
            f"Incorrect API key provided: {given}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        error = {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
        return web.json_response({"error": error}, status=401)

    async def _models(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, {}))
        if self.listing is not None:
            return web.json_response(self.listing)
        entry = {"id": self.model, "object": "model", "created": 0, "owned_by": self.owned_by}
        return web.json_response({"object": "list", "data": [{**entry, **self.entry}]})

    async def _props(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, {}))
        if self.props is None:
            return web.json_response({"detail": "Not Found"}, status=404)
        return web.json_response(self.props)

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((request.path, body))
        if self.embeddings is not None:
            return web.json_response(self.embeddings)
        data = [
            {"object": "embedding", "index": n, "embedding": [1.0, 0.0]}
            for n, _ in enumerate(body["input"])
        ]
        return web.json_response({"object": "list", "data": data, "model": body["model"]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((request.path, body))
        style = body.get("response_format", {}).get("type")
        if style in self.refused_styles:
            message = f"'body', 'response_format', 'type': input {style!r} is not allowed"
            error = {"message": message, "type": "internal_server_error"}
            return web.json_response({"error": error}, status=500)
        if self.answers and isinstance(self.answers[0], web.Response):
            response: web.Response = self.answers.pop(0)
            return response
        if body.get("stream"):
            return await self._stream(request)
        if self.answers:
            return web.json_response(self.answers.pop(0))
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": self.answer},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
            }
        )

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        chunks = (
            self.answers.pop(0)
            if self.answers
            else [
                {"choices": [{"index": 0, "delta": {"content": self.answer}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
        )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@contextlib.asynccontextmanager
async def serving(fake: FakeOpenAI) -> AsyncIterator[FakeOpenAI]:
    """`fake`, started on a free port of 127.0.0.1 and closed afterwards."""
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
