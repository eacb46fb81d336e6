"""Scripted slips of a small model, for the platform tests: what the fake model answers and
what the person must see in the end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from prometheus_client import REGISTRY

from bot.core.fallback import EMPTY_NOTICE
from tests.fakes.ollama import FakeOllama

ANSWER = "The VPN gateway is vpn-2."
GAVE_UP = "⚠️ I could not finish this answer: my model"


def slips(kind: str) -> float:
    """How many slips of `kind` this process counted so far."""
    return REGISTRY.get_sample_value("lorebot_model_slips_total", {"kind": kind}) or 0.0


@dataclass(frozen=True)
class Slip:
    script: Callable[[FakeOllama], None]
    ends_as: Callable[[str], bool]  # the stored (and shown) reply


def _empty_twice(fake: FakeOllama) -> None:
    fake.reply("")
    fake.reply("")


def _empty_once(fake: FakeOllama) -> None:
    fake.reply("  ")
    fake.reply(ANSWER)


def _intent(fake: FakeOllama) -> None:
    fake.reply("Let me search my notes for the gateway.")
    fake.reply(ANSWER)


def _round_limit(fake: FakeOllama) -> None:
    for n in range(4):  # the default limit: the fourth calls though no tool is offered
        fake.tool_call("memory_search", {"query": f"vpn {n}"})


def _same_mistake(fake: FakeOllama) -> None:
    fake.tool_call("check_vpn", {})
    fake.tool_call("check_vpn", {})


SLIPS = [
    pytest.param(Slip(_empty_twice, lambda r: r.startswith(EMPTY_NOTICE)), id="empty twice"),
    pytest.param(Slip(_empty_once, lambda r: r == ANSWER), id="empty once"),
    pytest.param(Slip(_intent, lambda r: r == ANSWER), id="intent"),
    pytest.param(
        Slip(_round_limit, lambda r: r.startswith(f"{GAVE_UP} was still")), id="round limit"
    ),
    pytest.param(
        Slip(_same_mistake, lambda r: r.startswith(f"{GAVE_UP} made the same")), id="same mistake"
    ),
]
