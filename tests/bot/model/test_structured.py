"""Structured answers as small models write them: JSON with raw control characters in its
strings is read as written; an answer that is not JSON, or does not fit, is asked again
once and then refused with what was wrong."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from bot.config.model_sections import OllamaSettings
from bot.model.client import Model
from bot.model.structured import MAX_ANSWER_TOKENS, InvalidModelOutput, ask_structured
from tests.fakes.ollama import FakeOllama


class Summary(BaseModel):
    summary: str
    topics: list[str]


async def test_a_raw_newline_inside_a_string_is_read_as_written(fake_ollama: FakeOllama) -> None:
    model = Model(OllamaSettings(host=fake_ollama.url, timeout_s=2.0))
    try:
        fake_ollama.reply('{"summary": "deploys run\non Tuesdays\t(10:00)", "topics": ["deploy"]}')
        found = await ask_structured(model, "Summarise: deploys run on Tuesdays.", Summary)
    finally:
        await model.close()
    assert found == Summary(summary="deploys run\non Tuesdays\t(10:00)", topics=["deploy"])
    assert len(fake_ollama.chat_requests) == 1


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("deploys run on Tuesdays", "not JSON: Expecting value at line 1 column 1"),
        ('{"summary": "x"}', "1 problems, first: Field required"),
    ],
)
async def test_an_answer_that_does_not_fit_twice_is_refused_with_what_was_wrong(
    fake_ollama: FakeOllama, answer: str, problem: str
) -> None:
    model = Model(OllamaSettings(host=fake_ollama.url, timeout_s=2.0))
    try:
        fake_ollama.reply(answer)
        fake_ollama.reply(answer)
        with pytest.raises(InvalidModelOutput, match=problem):
            await ask_structured(model, "Summarise: deploys run on Tuesdays.", Summary)
    finally:
        await model.close()
    assert len(fake_ollama.chat_requests) == 2


async def test_a_structured_answer_is_capped_so_a_looping_model_stops(
    fake_ollama: FakeOllama,
) -> None:
    model = Model(OllamaSettings(host=fake_ollama.url, timeout_s=2.0))
    try:
        fake_ollama.reply('{"summary": "deploys run on Tuesdays", "topics": ["deploy"]}')
        await ask_structured(model, "Summarise: deploys run on Tuesdays.", Summary)
    finally:
        await model.close()
    [request] = fake_ollama.chat_requests
    assert request["options"] == {"num_predict": MAX_ANSWER_TOKENS}
