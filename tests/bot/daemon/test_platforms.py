"""The platform table: a new platform is its adapter and one entry, which `run`, `doctor`
and the wiring then pick up with no other change; and the settings each entry passes on."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr

from adapters.base import Adapter
from adapters.diagnosis import Finding
from adapters.discord.adapter import DiscordAdapter
from bot.cli import doctor as doctor_cli
from bot.cli import run as run_cli
from bot.cli.main import main
from bot.config.loading import load_settings
from bot.config.settings import Settings
from bot.daemon.platforms import PLATFORMS, Platform
from bot.daemon.wiring import build_adapters
from bot.errors import UserError
from tests.fakes.adapter import RecordingAdapter
from tests.fakes.discord import GUILD_ID, TOKEN, FakeDiscord
from tests.fakes.discord import fake_discord_fixture as fake_discord_fixture  # noqa: F401
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import start_harness


@dataclass(frozen=True)
class ToySettings:
    """A platform's settings section, as a new platform would add one."""

    token: str | None = None

    @property
    def configured(self) -> bool:
        return self.token is not None


def toy_platform(section: ToySettings) -> Platform[ToySettings]:
    def build(toy: ToySettings) -> Adapter:
        return RecordingAdapter()

    async def diagnose(toy: ToySettings) -> list[Finding]:
        return [Finding(True, "toy", f"signed in with token {toy.token}")]

    return Platform(
        name="test",
        title="Toy",
        section=lambda settings: section,
        build=build,
        diagnose=diagnose,
        setup="LOREBOT_TOY__TOKEN",
    )


TOY_ON = toy_platform(ToySettings(token="toy-1"))
TOY_OFF = toy_platform(ToySettings())


@pytest.fixture
def settings(env: Path, fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    return load_settings()


async def test_a_new_platform_entry_is_built_and_its_adapter_runs_the_bot(
    settings: Settings, tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock
) -> None:
    assert build_adapters(settings, (*PLATFORMS, TOY_OFF)) == []
    [adapter] = build_adapters(settings, (*PLATFORMS, TOY_ON))
    assert isinstance(adapter, RecordingAdapter)

    harness = await start_harness(tmp_path, fake_ollama, clock, adapter)
    try:
        await harness.say("help")
        assert adapter.replies[-1].startswith("Here is what I understand")
    finally:
        await harness.bot.stop()


async def test_doctor_checks_a_new_platform_entry(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(json=False)
    code = await doctor_cli.cmd_doctor(args, settings, (*PLATFORMS, TOY_ON))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "✓ toy: signed in with token toy-1" in out
    assert "none configured" not in out

    await doctor_cli.cmd_doctor(args, settings, (*PLATFORMS, TOY_OFF))
    out = capsys.readouterr().out
    assert "toy" not in out and "✓ platforms: none configured" in out


async def test_run_without_a_platform_names_what_a_new_entry_needs(settings: Settings) -> None:
    args = argparse.Namespace()
    with pytest.raises(UserError) as raised:
        await run_cli.cmd_run(args, settings, (*PLATFORMS, TOY_OFF))
    message = str(raised.value)
    assert "LOREBOT_DISCORD__TOKEN for Discord, or LOREBOT_TOY__TOKEN for Toy" in message
    assert "(see docs/slack.md and docs/discord.md and docs/test.md)" in message


def test_run_without_a_platform_says_what_to_set_for_each(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run"]) == 1
    err = capsys.readouterr().err
    assert (
        "set LOREBOT_SLACK__BOT_TOKEN and LOREBOT_SLACK__APP_TOKEN for Slack, or "
        "LOREBOT_DISCORD__TOKEN for Discord" in err
    )
    assert "lorebot chat" in err


async def test_the_discord_command_server_setting_registers_slash_commands_there(
    env: Path, fake_discord: FakeDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_DISCORD__TOKEN", TOKEN)
    monkeypatch.setenv("LOREBOT_DISCORD__API_BASE_URL", fake_discord.api_base_url)
    monkeypatch.setenv("LOREBOT_DISCORD__GATEWAY_URL", str(fake_discord.gateway_url))
    monkeypatch.setenv("LOREBOT_DISCORD__COMMAND_GUILD_ID", str(GUILD_ID))
    [adapter] = build_adapters(load_settings())
    assert isinstance(adapter, DiscordAdapter)
    adapter.guild_ready_timeout = 0.05  # the wait for servers to load, not the sync

    async def sink(event: object) -> None:
        return None

    await adapter.start(sink)
    try:
        await fake_discord.wait_until(lambda: fake_discord.command_syncs)
        [sync] = fake_discord.command_syncs
        assert sync.guild_id == GUILD_ID
    finally:
        await adapter.close()


class MatrixSettings(BaseModel):
    homeserver: str = "https://matrix.example.org"
    access_token: SecretStr | None = None


class SettingsWithMatrix(Settings):
    matrix: MatrixSettings = MatrixSettings()


def test_a_new_platforms_secret_setting_is_scrubbed_from_logs_without_being_listed() -> None:
    settings = SettingsWithMatrix(
        matrix=MatrixSettings(access_token=SecretStr("syt_bWF0cml4_secret")),
        discord={"token": "discord-token-value"},
    )
    assert {"syt_bWF0cml4_secret", "discord-token-value"} <= set(settings.secrets())
    assert "https://matrix.example.org" not in settings.secrets()
