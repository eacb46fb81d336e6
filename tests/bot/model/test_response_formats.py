"""Structured output on an OpenAI-compatible server: what the server refused is learnt
once and kept beside the database, so a new process asks it the way it takes at once; a
server that changed is asked anew. Against a fake playing llama.cpp's refusal, and the
real llama.cpp server behind a recording proxy."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from pydantic import BaseModel

from bot.config.model_sections import OpenAISettings
from bot.model.client import Model
from bot.model.response_formats import FILE_NAME, ResponseFormats
from bot.model.structured import MAX_ANSWER_TOKENS, InvalidModelOutput, ask_structured
from tests.fakes.openai import FakeOpenAI, serving
from tests.support.llama import MODEL, LlamaServer, proxy_to


class Summary(BaseModel):
    summary: str


async def a_drafted_note(url: str, model_name: str, state: Path) -> Summary:
    """What one lorebot process does for its first drafted note: a new model client,
    with the state folder's file of what servers take, asks for one structured answer."""
    settings = OpenAISettings(base_url=url, model=model_name, timeout_s=60.0)
    model = Model(settings, formats=ResponseFormats.beside(state / "lorebot.db"))
    try:
        await model.probe()  # as the daemon does before its first turn
        return await ask_structured(model, "Summarise: deploys run on Tuesdays.", Summary)
    finally:
        await model.close()


async def test_a_refused_response_format_is_not_sent_again_by_a_new_process(
    tmp_path: Path,
) -> None:
    async with serving(FakeOpenAI(refused_styles={"json_schema"})) as fake:
        await a_drafted_note(fake.url, fake.model, tmp_path)
        assert fake.chat_styles() == ["json_schema", "json_object"]
        await a_drafted_note(fake.url, fake.model, tmp_path)  # another process, later
        assert fake.chat_styles() == ["json_schema", "json_object", "json_object"]
        # Each asks for no more than a structured answer needs.
        chats = [body for path, body in fake.requests if path.endswith("/chat/completions")]
        assert {body["max_tokens"] for body in chats} == {MAX_ANSWER_TOKENS}
    [kept] = json.loads((tmp_path / FILE_NAME).read_text())["servers"]
    assert (kept["url"], kept["model"], kept["style"]) == (fake.url, fake.model, "json_object")


async def test_another_server_at_the_same_address_is_asked_anew(tmp_path: Path) -> None:
    async with serving(FakeOpenAI(refused_styles={"json_schema"})) as fake:
        await a_drafted_note(fake.url, fake.model, tmp_path)
        # The server is replaced by one that takes the API's own format (vLLM's, say).
        fake.owned_by, fake.refused_styles = "vllm", set()
        fake.requests.clear()
        await a_drafted_note(fake.url, fake.model, tmp_path)
        assert fake.chat_styles() == ["json_schema"]
        await a_drafted_note(fake.url, fake.model, tmp_path)
        assert fake.chat_styles() == ["json_schema", "json_schema"]


async def test_a_way_kept_that_the_server_now_refuses_is_given_up_for_the_other(
    tmp_path: Path,
) -> None:
    async with serving(FakeOpenAI(refused_styles={"json_schema"})) as fake:
        await a_drafted_note(fake.url, fake.model, tmp_path)
        fake.refused_styles = {"json_object"}  # same server, upgraded: only the API's way
        fake.requests.clear()
        await a_drafted_note(fake.url, fake.model, tmp_path)
        await a_drafted_note(fake.url, fake.model, tmp_path)
        assert fake.chat_styles() == ["json_object", "json_schema", "json_schema"]


async def test_the_real_server_refuses_json_schema_once_across_processes(
    tmp_path: Path, llama_chat: LlamaServer
) -> None:
    """llama.cpp's server answers `json_schema` with a 500 and a traceback in its log: the
    first process learns it, and the next asks with `json_object` straight away. (The tiny
    model's answer may not fit and be asked for again: only the ways asked are checked.)"""
    async with proxy_to(llama_chat) as proxy:
        styles = []
        for _ in range(2):
            with contextlib.suppress(InvalidModelOutput):
                await a_drafted_note(proxy.url, MODEL, tmp_path)
            styles.append([r["response_format"]["type"] for r in proxy.requests if "messages" in r])
            proxy.requests.clear()
    first, second = styles
    assert first[:2] == ["json_schema", "json_object"] and set(first[2:]) <= {"json_object"}
    assert second and set(second) == {"json_object"}
