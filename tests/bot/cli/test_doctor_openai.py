"""`lorebot doctor` with an OpenAI-compatible server (`model.backend = "openai"`): one check
named `model` whether the server answers or not, with the OpenAI backend's fix; the context
length said with where it came from; how the server takes structured output; and a missing
`openai.model` named with where the backend was chosen. The server is a fake on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.cli.main import main
from bot.config.model_sections import OpenAISettings
from bot.model.client import Model
from bot.model.response_formats import ResponseFormats
from bot.model.structured import ask_structured
from tests.fakes.openai import FakeOpenAI, serving
from tests.support.llama import free_port


class Summary(BaseModel):
    summary: str


def use_openai(monkeypatch: pytest.MonkeyPatch, url: str, **values: str) -> None:
    for name, value in {
        "LOREBOT_MODEL__BACKEND": "openai",
        "LOREBOT_OPENAI__BASE_URL": url,
        "LOREBOT_OPENAI__MODEL": "qwen3",
        **values,
    }.items():
        monkeypatch.setenv(name, value)


async def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    await asyncio.to_thread(main, [*argv, "doctor"])
    return capsys.readouterr().out


async def doctor_checks(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    """`doctor --json`'s checks by name."""
    await asyncio.to_thread(main, ["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    return {check["name"]: check for check in report["checks"]}


# --- one check named `model`, with the OpenAI backend's fix ----------------------------------


async def test_a_server_that_is_down_fails_the_model_check_with_the_openai_fix(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    use_openai(monkeypatch, nowhere)
    out = await doctor(capsys)
    assert f"✗ model: unreachable at {nowhere} (cannot connect)" in out
    [fix] = [line for line in out.splitlines() if line.startswith("    fix: ")]
    assert "openai.base_url" in fix and "LOREBOT_OPENAI__BASE_URL" in fix
    assert "ollama" not in fix.lower()
    failing = (await doctor_checks(capsys))["model"]
    assert failing["ok"] is False and "ollama" not in failing["fix"].lower()


async def test_the_model_check_has_the_same_name_passing_as_failing(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serving(FakeOpenAI()) as fake:
        use_openai(monkeypatch, fake.url)
        passing = await doctor_checks(capsys)
    failing = await doctor_checks(capsys)  # the same settings, the server gone
    assert passing["model"]["ok"] is True and failing["model"]["ok"] is False
    assert "openai" not in passing and "openai" not in failing


# --- where the context length came from ----------------------------------------------------


@pytest.mark.parametrize(
    ("server", "configured", "said"),
    [
        (
            {},
            None,
            "context 8192 tokens (lorebot's default: the server does not say it; "
            "openai.context_tokens sets it)",
        ),
        (
            {"props": {"default_generation_settings": {"n_ctx": 4096}}},
            None,
            "context 4096 tokens (the server's /props n_ctx)",
        ),
        (
            {"entry": {"max_model_len": 32768}},
            None,
            "context 32768 tokens (the server's max_model_len in /v1/models)",
        ),
        (
            {"entry": {"meta": {"n_ctx_train": 131072}}},
            None,
            "context 131072 tokens (the model's n_ctx_train in /v1/models: the server may run "
            "with less)",
        ),
        (
            {"props": {"default_generation_settings": {"n_ctx": 4096}}},
            "2048",
            "context 2048 tokens (openai.context_tokens)",
        ),
    ],
)
async def test_the_context_length_is_said_with_where_it_came_from(
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    server: dict[str, Any],
    configured: str | None,
    said: str,
) -> None:
    async with serving(FakeOpenAI(**server)) as fake:
        use_openai(monkeypatch, fake.url)
        if configured is not None:
            monkeypatch.setenv("LOREBOT_OPENAI__CONTEXT_TOKENS", configured)
        out = await doctor(capsys)
    assert f"✓ model: qwen3 at {fake.url}, {said}, thinking no" in out


# --- structured output -----------------------------------------------------------------------


async def test_doctor_says_how_the_server_takes_structured_output_once_it_is_known(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with serving(FakeOpenAI(refused_styles={"json_schema"})) as fake:
        use_openai(monkeypatch, fake.url)
        assert "✓ structured output: not tried yet on this server" in await doctor(capsys)
        # The daemon's first drafted note, with the database where doctor looks.
        settings = OpenAISettings(base_url=fake.url, model="qwen3", timeout_s=30.0)
        formats = ResponseFormats.beside(env / "cli.db")
        model = Model(settings, formats=formats)
        try:
            await ask_structured(model, "Summarise: deploys run on Tuesdays.", Summary)
        finally:
            await model.close()
        out = await doctor(capsys)
    assert "✓ structured output: json_object (json_schema refused)" in out


# --- a missing openai.model --------------------------------------------------------------------

MISSING = (
    'openai.model ({model}): not set, but model.backend is "openai" ({backend}): name the '
    "model as the server's /v1/models lists it"
)


@pytest.mark.parametrize("where", ["environment", ".env", "config file"])
async def test_a_missing_openai_model_names_where_the_backend_was_chosen(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    argv: list[str] = []
    model = "or LOREBOT_OPENAI__MODEL"
    if where == "environment":
        monkeypatch.setenv("LOREBOT_MODEL__BACKEND", "openai")
        backend = "LOREBOT_MODEL__BACKEND in the environment"
    elif where == ".env":
        (env / ".env").write_text("LOREBOT_MODEL__BACKEND=openai\nLOREBOT_OPENAI__MODEL=\n")
        backend = f"LOREBOT_MODEL__BACKEND in {env / '.env'}"
        model = f"LOREBOT_OPENAI__MODEL in {env / '.env'}"
    else:
        config = env / "lorebot.toml"
        config.write_text('[model]\nbackend = "openai"\n')
        argv, backend = ["--config", str(config)], str(config)
    out = await doctor(capsys, *argv)
    expected = MISSING.format(model=model, backend=backend)
    assert out.splitlines()[0] == f"✗ config: {expected}"


# --- a key the server quotes back ----------------------------------------------------------------


async def test_a_key_the_server_quotes_back_is_in_no_output_and_no_log(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "local-key-7f3a9b2c"  # no shape the credential patterns know
    async with serving(FakeOpenAI(key="the-right-key")) as fake:
        use_openai(monkeypatch, fake.url, LOREBOT_OPENAI__API_KEY=key)
        await asyncio.to_thread(main, ["--debug", "doctor"])
        text = capsys.readouterr()
        await asyncio.to_thread(main, ["--debug", "doctor", "--json"])
        as_json = capsys.readouterr()
    refused = f"✗ model: {fake.url} refused the API key (401): Incorrect API key provided: "
    assert f"{refused}[REDACTED]. You can find your API key at" in text.out
    model = {check["name"]: check for check in json.loads(as_json.out)["checks"]}["model"]
    assert "Incorrect API key provided: [REDACTED]." in model["detail"]
    assert text.err and as_json.err  # the debug logs were written
    for said in (text.out, text.err, as_json.out, as_json.err):
        assert key not in said
