"""What a person sees first in `lorebot chat` at a terminal: a banner with the model, its
backend and whether it answers, and how to get help and leave; a model that does not
answer is said there, not in a log line before it. A script gets no banner."""

from __future__ import annotations

from pathlib import Path

from bot import __version__
from tests.fakes.ollama import FakeOllama
from tests.support import terminal
from tests.support.terminal import Terminal, end_chat, start_chat

# The fixture, bound by assignment: an imported name used as a test argument trips ruff's F811.
chats = terminal.chats

NOTHING_LISTENS = "http://127.0.0.1:9"
HOW_TO = "type help to see what lorebot understands, Ctrl-D to quit"


def shown_before_the_prompt(chat: Terminal) -> list[str]:
    """The rows of the screen above the first prompt."""
    rows = [row.rstrip() for row in chat.display]
    return rows[: next(i for i, row in enumerate(rows) if row.startswith("alice>"))]


async def test_the_banner_names_the_model_and_says_it_answers(
    tmp_path: Path, fake_ollama: FakeOllama, chats: list[Terminal]
) -> None:
    chat = await start_chat(chats, tmp_path, fake_ollama, "--channel", "ops")

    assert shown_before_the_prompt(chat) == [
        f"lorebot {__version__}: chatting as alice in #ops",
        f"model qwen3:8b via ollama at {fake_ollama.url} answers",
        HOW_TO,
    ]
    await end_chat(chat)


async def test_a_model_that_does_not_answer_is_said_in_the_banner_not_in_a_log_line(
    tmp_path: Path, chats: list[Terminal]
) -> None:
    chat = await start_chat(chats, tmp_path, NOTHING_LISTENS)

    assert shown_before_the_prompt(chat) == [
        f"lorebot {__version__}: chatting as alice in a DM",
        f"model qwen3:8b via ollama does not answer: unreachable at {NOTHING_LISTENS} "
        "(cannot connect)",
        "  until it does, lorebot answers from its notes; `lorebot doctor` says how to fix it",
        HOW_TO,
    ]
    assert "WARNING" not in chat.screen
    await end_chat(chat)
