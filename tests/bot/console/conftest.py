"""A running Bot with its web console on (`tests/support/console.py` has the client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.adapter import ButtonsAdapter
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.console import ConsoleHarness
from tests.support.harness import start_harness


@pytest.fixture
def console_settings() -> dict[str, Any]:
    """The `[console]` of the test's bot (a test overrides it to sign in otherwise)."""
    return {}


@pytest.fixture
def bot_settings() -> dict[str, Any]:
    """The `[bot]` of the test's bot."""
    return {}


@pytest.fixture
async def console(
    tmp_path: Path,
    fake_ollama: FakeOllama,
    clock: FakeClock,
    console_settings: dict[str, Any],
    bot_settings: dict[str, Any],
) -> AsyncIterator[ConsoleHarness]:
    h = await start_harness(
        tmp_path,
        fake_ollama,
        clock,
        ButtonsAdapter(),
        console={"enabled": True, "listen": "127.0.0.1:0", **console_settings},
        bot={"admins": ["user:test/UADMIN"], **bot_settings},
    )
    assert h.bot.console is not None
    harness = ConsoleHarness(h, f"http://127.0.0.1:{h.bot.console.port}")
    try:
        yield harness
    finally:
        await harness.close()
        await h.bot.stop()
